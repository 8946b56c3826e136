import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { sql } from "drizzle-orm";
import { loadConfig, type Config } from "../config/index.ts";
import { systemClock, type Clock, type Services } from "../context.ts";
import { Keyring } from "../crypto/index.ts";
import { notifyPublisher } from "../events/index.ts";
import { migrateDatabase, migrationsFolder, openPglite, openPostgres, type Database } from "../../db/client.ts";

/**
 * Test databases. With TEST_DATABASE_URL (or DATABASE_URL) set, each call creates a
 * fresh PostgreSQL database cloned from a migrated template; otherwise an in-memory
 * PGlite. RETASC_TEST_DRIVER=pglite forces PGlite.
 */
export const testDatabaseUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || undefined;
/**
 * With TEST_DATABASE_DIRECT_URL, TEST_DATABASE_URL is a pooler in transaction mode in front of
 * the same server (.ci/run runs the concurrency suites and the swarm so): databases are made,
 * migrated and dropped on the direct URL, and every pool opens through the pooler with its
 * LISTEN on the direct URL, as an app with DATABASE_DIRECT_URL does.
 */
export const testDirectUrl = process.env.TEST_DATABASE_DIRECT_URL || undefined;
export const testDriver: "postgres" | "pglite" =
  process.env.RETASC_TEST_DRIVER === "pglite" || !testDatabaseUrl ? "pglite" : "postgres";

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * A hand-written mutant of a SQL function (scripts/mutants.mjs): SQL run after the migrations,
 * so the suites meet a database with one guarantee broken. Never set outside a mutation run.
 */
const mutantSql = process.env.RETASC_TEST_MUTANT_SQL ? fs.readFileSync(process.env.RETASC_TEST_MUTANT_SQL, "utf8") : undefined;

/** The migrations (and the mutant, when one is applied): what a migrated template is named after. */
export function migrationsHash(): string {
  const hash = crypto.createHash("sha256");
  for (const file of fs.readdirSync(migrationsFolder).sort()) {
    if (file.endsWith(".sql")) hash.update(fs.readFileSync(path.join(migrationsFolder, file)));
  }
  if (mutantSql) hash.update(mutantSql);
  return hash.digest("hex").slice(0, 12);
}

async function applyMutant(database: Database) {
  if (mutantSql) await database.db.execute(sql.raw(mutantSql));
}

async function ensureTemplate(adminUrl: string): Promise<string> {
  const template = `retasc_tpl_${migrationsHash()}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin`select pg_advisory_lock(7318202)`;
    const exists = await admin`select 1 from pg_database where datname = ${template}`;
    if (exists.length === 0) {
      await admin.unsafe(`create database "${template}"`);
      const database = await openPostgres(withDatabase(adminUrl, template), { max: 1 });
      try {
        await migrateDatabase(database, withDatabase(adminUrl, template));
        await applyMutant(database);
      } finally {
        await database.close();
      }
    }
    await admin`select pg_advisory_unlock(7318202)`;
  } finally {
    await admin.end({ timeout: 5 });
  }
  return template;
}

export interface TestDatabase {
  database: Database;
  /** Connection string of this test's own PostgreSQL database (postgres driver only); through the pooler when there is one. */
  url: string | undefined;
  /** The direct connection string when `url` goes through a pooler (TEST_DATABASE_DIRECT_URL), else undefined. */
  directUrl: string | undefined;
  /** Opens another pool on the same database: a second "app instance". */
  openAnother(max?: number): Promise<Database>;
  close(): Promise<void>;
}

/**
 * A migrated PGlite cluster, dumped once per process: each test's database starts from it, about
 * a second, rather than from an empty cluster (initdb) and every migration, about three.
 */
let pgliteTemplate: Promise<Blob> | undefined;
async function migratedPglite(): Promise<Blob> {
  pgliteTemplate ??= (async () => {
    const template = await openPglite();
    try {
      await migrateDatabase(template);
      return await template.dumpDataDir();
    } finally {
      await template.close();
    }
  })();
  return pgliteTemplate;
}

export async function createTestDatabase(options: { max?: number } = {}): Promise<TestDatabase> {
  if (testDriver === "pglite") {
    const database = await openPglite(undefined, { loadDataDir: await migratedPglite() });
    await applyMutant(database);
    return {
      database,
      url: undefined,
      directUrl: undefined,
      openAnother: async () => database,
      close: () => database.close(),
    };
  }
  const adminUrl = testDirectUrl ?? testDatabaseUrl!;
  const template = await ensureTemplate(adminUrl);
  const name = `retasc_t_${crypto.randomBytes(6).toString("hex")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`create database "${name}" template "${template}"`);
        break;
      } catch (error) {
        // Another test may be cloning the same template right now.
        if (attempt > 40 || !String((error as Error).message).includes("being accessed")) throw error;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = withDatabase(testDatabaseUrl!, name);
  const directUrl = testDirectUrl ? withDatabase(testDirectUrl, name) : undefined;
  const database = await openPostgres(url, { max: options.max ?? 10, directUrl });
  const extra: Database[] = [];
  return {
    database,
    url,
    directUrl,
    async openAnother(max = 10) {
      const other = await openPostgres(url, { max, directUrl });
      extra.push(other);
      return other;
    },
    async close() {
      await Promise.all([database.close(), ...extra.map((d) => d.close())]);
      const cleanup = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await cleanup.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await cleanup.end({ timeout: 5 });
      }
    },
  };
}

/** A controllable clock for tests of leases and deadlines. */
export class TestClock implements Clock {
  constructor(private current = new Date("2026-06-01T12:00:00.000Z").getTime()) {}
  now() {
    return new Date(this.current);
  }
  advance(ms: number) {
    this.current += ms;
  }
  set(date: Date) {
    this.current = date.getTime();
  }
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({ NODE_ENV: "test", LOG_LEVEL: "silent", ...overrides });
}

export function servicesFor(
  database: Database,
  options: { clock?: Clock; config?: Config; keyring?: Keyring } = {},
): Services {
  return {
    db: database.db,
    config: options.config ?? testConfig(),
    keyring: options.keyring ?? new Keyring(crypto.randomBytes(32)),
    clock: options.clock ?? systemClock,
    events: notifyPublisher,
  };
}
