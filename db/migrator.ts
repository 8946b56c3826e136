import fs from "node:fs";
import path from "node:path";
import { readMigrationFiles } from "drizzle-orm/migrator";

/**
 * Applies migrations so a claim loop never waits long behind one (decision 069). Drizzle's own
 * migrator runs every pending migration in one transaction with no lock timeout: an ALTER of
 * `issues` queued behind a long transaction makes every claim queue behind it, and
 * `CREATE INDEX CONCURRENTLY` cannot run at all. Here each migration is a transaction of its own
 * under `SET LOCAL lock_timeout`, retried with backoff when the timeout fires, and a migration
 * of `CREATE/DROP INDEX CONCURRENTLY` statements runs them outside any transaction, made
 * idempotent by the migrator (an index an interrupted build left INVALID is dropped and built
 * again). The journal is drizzle's: `drizzle.__drizzle_migrations` rows of (sha256 of the file,
 * the journal's `when`), read with drizzle's rule, so databases drizzle migrated see no change.
 */

/** Runs SQL on the one connection migrations use: a statement alone, or several in one transaction. */
export interface MigrationRunner {
  execute(statement: string): Promise<Record<string, unknown>[]>;
  transaction(body: (run: (statement: string) => Promise<Record<string, unknown>[]>) => Promise<void>): Promise<void>;
}

export interface MigrateOptions {
  /** The longest a migration's statement waits for a lock before it gives up and retries (ms). */
  lockTimeoutMs?: number;
  /** The same for CREATE/DROP INDEX CONCURRENTLY, whose waits block no write (ms). */
  concurrentLockTimeoutMs?: number;
  /** Tries per migration before the start fails. */
  attempts?: number;
  /** Tries per CONCURRENTLY statement (each may be a long build). */
  concurrentAttempts?: number;
  /** First pause between tries (ms); it doubles up to `maxBackoffMs`, with jitter. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Told of each try that hit the lock timeout. */
  onRetry?: (event: { tag: string; attempt: number; attempts: number; pauseMs: number }) => void;
}

/**
 * 50 ms: a claim that arrives while a migration waits for its lock queues behind it for at most
 * this long, plus the migration's own (short) hold, and the promise is 100 ms.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 50;
const defaults = {
  lockTimeoutMs: MIGRATION_LOCK_TIMEOUT_MS,
  concurrentLockTimeoutMs: 60_000,
  attempts: 30,
  concurrentAttempts: 3,
  backoffMs: 100,
  maxBackoffMs: 2_000,
};

export interface PlannedMigration {
  tag: string;
  /** The journal's `when`: drizzle records it as `created_at`. */
  when: number;
  /** sha256 of the file, as drizzle records it. */
  hash: string;
  statements: string[];
  /** Every statement is CREATE/DROP INDEX CONCURRENTLY: they run outside a transaction. */
  concurrent: boolean;
}

/** The leading comments and blank lines of a statement. */
const leading = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/;
const identifier = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)`;
const indexName = String.raw`(${identifier}(?:\.${identifier})?)`;
const createConcurrently = new RegExp(String.raw`^create\s+(?:unique\s+)?index\s+concurrently\s+(?:(if\s+not\s+exists)\s+)?(?:${indexName}\s+)?on\b`, "i");
const dropConcurrently = new RegExp(String.raw`^drop\s+index\s+concurrently\s+(?:(if\s+exists)\s+)?${indexName}\s*(?:cascade|restrict)?\s*;?\s*$`, "i");
const mentionsConcurrently = /^(?:create\s+(?:unique\s+)?index|drop\s+index|reindex)\b[^;]*\bconcurrently\b/i;

export type ConcurrentStatement = { kind: "create" | "drop"; index: string; sql: string };

/** A CREATE/DROP INDEX CONCURRENTLY statement and the index it names, or null for any other statement. */
export function concurrentStatement(statement: string, tag: string): ConcurrentStatement | null {
  const body = statement.replace(leading, "");
  if (!mentionsConcurrently.test(body)) return null;
  const refuse = (why: string) => new Error(`migration ${tag}: ${why}: ${body.slice(0, 120)}`);
  if (body.replace(/;\s*$/, "").includes(";")) throw refuse("a CONCURRENTLY statement stands alone between statement-breakpoints");
  const create = createConcurrently.exec(body);
  if (create) {
    if (!create[2]) throw refuse("an index built CONCURRENTLY is named, so a retry can find what an interrupted build left");
    return { kind: "create", index: create[2], sql: statement };
  }
  const drop = dropConcurrently.exec(body);
  if (drop) return { kind: "drop", index: drop[2]!, sql: statement };
  throw refuse("only CREATE INDEX CONCURRENTLY and DROP INDEX CONCURRENTLY (of one index) run outside a transaction");
}

/** The journal's migrations in order, each split at drizzle's statement-breakpoints and classified. */
export function planMigrations(folder: string): PlannedMigration[] {
  const journal = JSON.parse(fs.readFileSync(path.join(folder, "meta", "_journal.json"), "utf8")) as { entries: { tag: string; when: number }[] };
  const files = readMigrationFiles({ migrationsFolder: folder });
  return files.map((file, i) => {
    const tag = journal.entries[i]!.tag;
    const statements = file.sql.filter((s) => s.trim() !== "");
    const concurrent = statements.map((s) => concurrentStatement(s, tag) !== null);
    if (concurrent.includes(true) && concurrent.includes(false)) {
      // A retry runs the whole migration again: the transactional part would run twice.
      throw new Error(`migration ${tag}: CONCURRENTLY statements go in a migration of their own, with no other statement`);
    }
    return { tag, when: file.folderMillis, hash: file.hash, statements, concurrent: concurrent.includes(true) };
  });
}

export class MigrationLockTimeout extends Error {
  readonly code = "MIGRATION_LOCK_TIMEOUT";
}

/** The PostgreSQL error inside a driver's or drizzle's wrapping. */
function pgError(error: unknown): { code?: string; message: string } {
  let e = error as { code?: string; message?: string; cause?: unknown } | undefined;
  while (e && !e.code && e.cause) e = e.cause as typeof e;
  return { code: e?.code, message: e?.message ?? String(error) };
}

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Applies the pending migrations; returns each applied one with its tries (1 + the lock timeouts it met). */
export async function applyMigrations(runner: MigrationRunner, folder: string, options: MigrateOptions = {}): Promise<{ tag: string; attempts: number }[]> {
  const settings = { ...defaults, ...options };
  const planned = planMigrations(folder);
  await runner.execute(`create schema if not exists "drizzle"`);
  await runner.execute(`create table if not exists "drizzle"."__drizzle_migrations" (id serial primary key, hash text not null, created_at bigint)`);
  // Drizzle's rule, kept so a database it migrated sees the same pending set: what is newer than the newest row.
  const [last] = await runner.execute(`select created_at from "drizzle"."__drizzle_migrations" order by created_at desc limit 1`);
  const newest = last ? Number(last.created_at) : -Infinity;
  const applied: { tag: string; attempts: number }[] = [];

  const withRetries = async (tag: string, limits: { timeoutMs: number; attempts: number }, attempt: () => Promise<void>): Promise<number> => {
    for (let n = 1; ; n++) {
      try {
        await attempt();
        return n;
      } catch (error) {
        const { code, message } = pgError(error);
        if (code !== "55P03") throw new Error(`migration ${tag} failed: ${message}`, { cause: error });
        if (n >= limits.attempts) {
          throw new MigrationLockTimeout(
            `MIGRATION_LOCK_TIMEOUT: migration ${tag} could not take its locks: ${n} tries each waited ${limits.timeoutMs} ms behind other transactions ` +
              `(a long transaction on the tables it changes; see pg_stat_activity). Nothing of it was recorded; the next start tries again.`,
            { cause: error },
          );
        }
        const pauseMs = Math.round(Math.min(settings.maxBackoffMs, settings.backoffMs * 2 ** (n - 1)) * (0.5 + Math.random() / 2));
        settings.onRetry?.({ tag, attempt: n, attempts: limits.attempts, pauseMs });
        await sleep(pauseMs);
      }
    }
  };
  const limits = { timeoutMs: settings.lockTimeoutMs, attempts: settings.attempts };
  const concurrentLimits = { timeoutMs: settings.concurrentLockTimeoutMs, attempts: settings.concurrentAttempts };
  const record = (m: PlannedMigration) =>
    `insert into "drizzle"."__drizzle_migrations" ("hash", "created_at") values (${literal(m.hash)}, ${m.when})`;

  for (const migration of planned) {
    if (migration.when <= newest) continue;
    let retries = 0;
    if (migration.concurrent) {
      for (const statement of migration.statements) {
        const concurrent = concurrentStatement(statement, migration.tag)!;
        retries += (await withRetries(migration.tag, concurrentLimits, () => runConcurrently(runner, concurrent, settings.concurrentLockTimeoutMs))) - 1;
      }
    }
    retries += (await withRetries(migration.tag, limits, () =>
      runner.transaction(async (run) => {
        await run(`set local lock_timeout = '${settings.lockTimeoutMs}ms'`);
        if (!migration.concurrent) for (const statement of migration.statements) await run(statement);
        await run(record(migration));
      }),
    )) - 1;
    applied.push({ tag: migration.tag, attempts: 1 + retries });
  }
  return applied;
}

/**
 * One CONCURRENTLY statement, outside a transaction, safe to run again: an index already built
 * is left alone (as IF NOT EXISTS would), one an interrupted build left INVALID is dropped
 * first, and a drop of an index that is gone is skipped.
 */
async function runConcurrently(runner: MigrationRunner, statement: ConcurrentStatement, lockTimeoutMs: number): Promise<void> {
  const [found] = await runner.execute(`select i.indisvalid as valid from pg_index i where i.indexrelid = to_regclass(${literal(statement.index)})`);
  if (statement.kind === "drop" && !found) return;
  if (statement.kind === "create" && found?.valid === true) return;
  await runner.execute(`set lock_timeout = '${lockTimeoutMs}ms'`);
  try {
    if (statement.kind === "create" && found) await runner.execute(`drop index concurrently if exists ${statement.index}`);
    await runner.execute(statement.sql);
  } finally {
    // PGlite's one connection is the app's too: leave its session as it was.
    await runner.execute(`reset lock_timeout`);
  }
}
