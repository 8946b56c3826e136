import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { sql as drizzleSql, type SQL } from "drizzle-orm";
import type { Sql as PostgresClient } from "postgres";
import { tightenDataDir } from "./data-dir.ts";
import { applyMigrations, type MigrateOptions, type MigrationRunner } from "./migrator.ts";
import * as schema from "./schema/index.ts";

export { schema };
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Driver = "pglite" | "postgres";

export interface Database {
  db: Db;
  driver: Driver;
  /** Subscribe to a NOTIFY channel; returns an unsubscribe function. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  /** The pool's size and what holds or waits for its connections now (for /metrics). */
  pool(): PoolUse;
  close(): Promise<void>;
}

export interface PoolUse {
  max: number;
  /** Open transactions plus statements run outside one; above `max`, the rest wait for a connection. */
  inUse: number;
}

export const migrationsFolder = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

/** Rows of a raw `db.execute()`: PGlite returns `{ rows }`, postgres.js an array. */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

export async function query<T>(db: Db, statement: SQL): Promise<T[]> {
  return rowsOf<T>(await db.execute(statement));
}

/** A PostgreSQL array literal (`{"a","b"}`) to bind as one parameter and cast (`::text[]`, `::bigint[]`), however long the list, on both drivers. */
export const pgArray = (values: string[]) => `{${values.map((v) => `"${v.replace(/["\\]/g, "\\$&")}"`).join(",")}}`;

/**
 * PostgreSQL through postgres.js. With `directUrl` (DATABASE_DIRECT_URL), `url` is taken to be a
 * pooler in transaction mode (PgBouncer, Supavisor, RDS Proxy), which hands each transaction any
 * server connection: nothing may outlive a transaction on it. So statements are unnamed (a named
 * prepared statement lives on one server connection), no session setting is sent at connect, and
 * LISTEN, which needs a session of its own for as long as it listens, opens on `directUrl`.
 * Migrations take a session advisory lock, so they run on the direct URL too (boot.ts).
 */
export async function openPostgres(
  url: string,
  options: { max?: number; directUrl?: string; /** Told each statement's text as it is sent (the statement-budget test counts them). */ onStatement?: (text: string) => void } = {},
): Promise<Database> {
  const { default: postgres } = await import("postgres");
  const { drizzle } = await import("drizzle-orm/postgres-js");
  const pooled = options.directUrl !== undefined;
  const max = options.max ?? 20;
  const sql = postgres(url, {
    max,
    onnotice: () => {},
    connect_timeout: 10,
    idle_timeout: 30,
    ...(options.onStatement ? { debug: (_connection: number, text: string) => options.onStatement!(text) } : {}),
    ...(pooled
      ? { prepare: false }
      : {
          // Prepared statements are planned for their actual parameters every time, as unnamed ones
          // are: a generic plan can be far worse (an EXISTS over a partial index became a full scan).
          connection: { plan_cache_mode: "force_custom_plan" },
        }),
  });
  const use = { max, inUse: 0 };
  const db = drizzle(instrumented(sql, use, { prepare: !pooled, scoped: false }), { schema }) as unknown as Db;
  let listener: PostgresClient | null = null;
  return {
    db,
    driver: "postgres",
    async listen(channel, onPayload) {
      // postgres.js keeps one LISTEN connection per client for every channel.
      const client = pooled ? (listener ??= postgres(options.directUrl!, { max: 1, onnotice: () => {}, connect_timeout: 10 })) : sql;
      const sub = await client.listen(channel, (payload) => onPayload(payload));
      return () => sub.unlisten();
    },
    pool: () => ({ ...use }),
    async close() {
      await Promise.all([sql.end({ timeout: 5 }), listener?.end({ timeout: 5 })]);
    },
  };
}

/** Statements with more parameters than this (bulk inserts) stay unprepared, so per-connection statement caches stay small. */
const MAX_PREPARED_PARAMETERS = 64;

/**
 * Counts what holds the pool's connections (`use.inUse`: each open transaction, each statement
 * outside one, from its start to its settling) and, unless behind a pooler, prepares statements:
 * drizzle-orm runs every postgres.js query as an unnamed statement, and postgres.js then
 * describes each parameterized one in a round trip of its own before executing it
 * (drizzle-orm#6096): every query cost two round trips. Named prepared statements cost one
 * (and skip re-parsing). Transactions and savepoints hand out scoped clients, so those are
 * wrapped too (their statements run on the transaction's connection, already counted).
 */
function instrumented<T extends PostgresClient>(client: T, use: { inUse: number }, mode: { prepare: boolean; scoped: boolean }): T {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === "unsafe") {
        return (text: string, parameters?: unknown[], options?: { prepare?: boolean }) => {
          const pending = target.unsafe(text, parameters as never, {
            ...options,
            prepare: mode.prepare && (options?.prepare === true || (parameters?.length ?? 0) <= MAX_PREPARED_PARAMETERS),
          });
          return mode.scoped ? pending : counted(pending, use);
        };
      }
      if (property === "begin" || property === "savepoint") {
        return (...args: unknown[]) => {
          const fn = args.pop() as (scoped: PostgresClient) => unknown;
          const method = Reflect.get(target, property, receiver) as (...a: unknown[]) => Promise<unknown>;
          const run = () => method(...args, (scoped: PostgresClient) => fn(instrumented(scoped, use, { ...mode, scoped: true })));
          if (mode.scoped) return run();
          use.inUse++;
          return run().finally(() => use.inUse--);
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
}

/**
 * A postgres.js query runs when first awaited (its `then`), after drizzle has chosen its row
 * format (`.values()` returns the query itself): count from then until it settles.
 */
function counted<Q extends object>(pending: Q, use: { inUse: number }): Q {
  const proxy: Q = new Proxy(pending, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== "function") return value;
      if (property === "then") {
        return (onFulfilled?: (v: unknown) => unknown, onRejected?: (e: unknown) => unknown) => {
          use.inUse++;
          let settled = false;
          const settle = () => {
            if (settled) return;
            settled = true;
            use.inUse--;
          };
          return (value as Promise<unknown>["then"]).call(
            target,
            (v) => (settle(), onFulfilled ? onFulfilled(v) : v),
            (e) => {
              settle();
              if (onRejected) return onRejected(e);
              throw e;
            },
          );
        };
      }
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result === target ? proxy : result;
      };
    },
  });
  return proxy;
}

/**
 * PGlite in `dataDir`, or in memory when dataDir is undefined (tests); in memory, `loadDataDir` starts
 * it from another one's `dumpDataDir()` instead of an empty cluster (a migrated template, for tests).
 */
export async function openPglite(dataDir?: string, options: { loadDataDir?: Blob } = {}): Promise<Database & { dumpDataDir(): Promise<Blob> }> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  if (dataDir) fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const client = dataDir ? new PGlite(dataDir) : new PGlite(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {});
  await client.waitReady;
  // A fresh cluster is written 0666 whatever the umask; make it private as soon as it exists.
  if (dataDir) tightenDataDir(dataDir);
  const db = drizzle(client, { schema }) as unknown as Db;
  return {
    db,
    driver: "pglite",
    async listen(channel, onPayload) {
      const unsub = await client.listen(channel, onPayload);
      return async () => unsub();
    },
    // One connection, transactions one at a time: nothing to count that would help an operator.
    pool: () => ({ max: 1, inUse: 0 }),
    close: () => client.close(),
    dumpDataDir: () => client.dumpDataDir("none"),
  };
}

/**
 * Applies pending migrations, each in a transaction of its own under a lock timeout, retried
 * (db/migrator.ts, decision 069). On PostgreSQL, an advisory lock lets many instances start at
 * once; the migrations run on a connection of their own. PGlite has one connection: the same
 * files apply there, through the app's.
 */
export async function migrateDatabase(database: Database, url?: string, options: MigrateOptions & { folder?: string } = {}): Promise<{ tag: string; attempts: number }[]> {
  const folder = options.folder ?? migrationsFolder;
  if (database.driver === "pglite") return applyMigrations(drizzleRunner(database.db), folder, options);
  const { default: postgres } = await import("postgres");
  const { drizzle } = await import("drizzle-orm/postgres-js");
  if (!url) throw new Error("migrateDatabase needs the PostgreSQL url");
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql`select pg_advisory_lock(7318201)`;
    return await applyMigrations(drizzleRunner(drizzle(sql) as unknown as Db), folder, options);
  } finally {
    await sql`select pg_advisory_unlock(7318201)`.catch(() => {});
    await sql.end({ timeout: 5 });
  }
}

/** Raw statements as drizzle's migrator sent them (postgres.js: the simple protocol; PGlite: one statement each). */
function drizzleRunner(db: Db): MigrationRunner {
  const run = async (on: Db, statement: string) => rowsOf<Record<string, unknown>>(await on.execute(drizzleSql.raw(statement)));
  return {
    execute: (statement) => run(db, statement),
    transaction: (body) => db.transaction((tx) => body((statement) => run(tx as unknown as Db, statement))),
  };
}

/** Number of migrations in the journal vs applied, for /healthz. */
export async function migrationStatus(db: Db): Promise<{ expected: number; applied: number }> {
  const journal = JSON.parse(
    fs.readFileSync(path.join(migrationsFolder, "meta", "_journal.json"), "utf8"),
  ) as { entries: unknown[] };
  const { sql } = await import("drizzle-orm");
  const applied = await query<{ n: number }>(
    db,
    sql`select count(*)::int as n from drizzle.__drizzle_migrations`,
  ).catch(() => [{ n: 0 }]);
  return { expected: journal.entries.length, applied: Number(applied[0]?.n ?? 0) };
}
