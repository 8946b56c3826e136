import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testDatabaseUrl, testDirectUrl, testDriver, type TestDatabase } from "../server/testing/db.ts";
import { migrateDatabase, migrationsFolder, openPglite, openPostgres, query, type Database } from "./client.ts";
import { concurrentStatement, MigrationLockTimeout, planMigrations } from "./migrator.ts";
import { journalRows, migrationsWith, migrationsWithoutConcurrently, schemaFingerprint } from "./testing/migration-folder.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the migrations as files (decision 069)", () => {
  it("every committed migration is one the migrator accepts", () => {
    const planned = planMigrations(migrationsFolder);
    const journal = JSON.parse(fs.readFileSync(path.join(migrationsFolder, "meta", "_journal.json"), "utf8")) as { entries: unknown[] };
    expect(planned).toHaveLength(journal.entries.length);
  });

  it("a new migration's `when` is later than every earlier one, or drizzle's rule (newer than the newest row) skips it", () => {
    const planned = planMigrations(migrationsFolder);
    // 0042_release_stalled is older than 0041_change_type: a database migrated between the two
    // never got it. Recorded, it cannot move (its row is in live databases); none may follow it.
    const known = new Set(["0042_release_stalled"]);
    const late = planned.filter((m, i) => i > 0 && m.when <= Math.max(...planned.slice(0, i).map((p) => p.when)) && !known.has(m.tag));
    expect(late.map((m) => m.tag)).toEqual([]);
  });

  it("CONCURRENTLY statements stand alone, name their index, and keep to a migration of their own", () => {
    expect(concurrentStatement(`CREATE INDEX CONCURRENTLY "a_idx" ON "issues" ("org_id");`, "t")).toMatchObject({ kind: "create", index: `"a_idx"` });
    expect(concurrentStatement(`-- why\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS public.b ON issues (id)`, "t")).toMatchObject({ kind: "create", index: "public.b" });
    expect(concurrentStatement(`drop index concurrently if exists "a_idx"`, "t")).toMatchObject({ kind: "drop", index: `"a_idx"` });
    expect(concurrentStatement(`CREATE INDEX "a_idx" ON "issues" ("org_id")`, "t")).toBeNull();
    expect(() => concurrentStatement(`CREATE INDEX CONCURRENTLY ON issues (org_id)`, "t")).toThrow(/is named/);
    expect(() => concurrentStatement(`CREATE INDEX CONCURRENTLY a ON issues (org_id); CREATE INDEX CONCURRENTLY b ON issues (id)`, "t")).toThrow(/stands alone/);
    expect(() => concurrentStatement(`REINDEX INDEX CONCURRENTLY a`, "t")).toThrow(/only CREATE INDEX CONCURRENTLY and DROP INDEX CONCURRENTLY/);
    const mixed = migrationsWith([{ tag: "9001_mixed", sql: `ALTER TABLE "issues" ADD COLUMN "x" text;--> statement-breakpoint\nCREATE INDEX CONCURRENTLY "x_idx" ON "issues" ("x");` }]);
    try {
      expect(() => planMigrations(mixed.folder)).toThrow(/9001_mixed: CONCURRENTLY statements go in a migration of their own/);
    } finally {
      mixed.remove();
    }
  });
});

/** An empty database of each driver, migrated by drizzle's migrator and by ours. */
async function emptyDatabases(): Promise<{ drizzle: Database; ours: Database; oursUrl?: string; drizzleUrl?: string; close(): Promise<void> }> {
  if (testDriver === "pglite") {
    const [a, b] = [await openPglite(), await openPglite()];
    return { drizzle: a, ours: b, close: async () => void (await Promise.all([a.close(), b.close()])) };
  }
  const adminUrl = testDirectUrl ?? testDatabaseUrl!;
  const names = [0, 1].map(() => `retasc_m_${crypto.randomBytes(5).toString("hex")}`);
  const urlOf = (name: string) => Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  for (const name of names) await admin.unsafe(`create database "${name}"`);
  const [a, b] = [await openPostgres(urlOf(names[0]!), { max: 2 }), await openPostgres(urlOf(names[1]!), { max: 2 })];
  return {
    drizzle: a,
    ours: b,
    drizzleUrl: urlOf(names[0]!),
    oursUrl: urlOf(names[1]!),
    async close() {
      await Promise.all([a.close(), b.close()]);
      for (const name of names) await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end({ timeout: 5 });
    },
  };
}

async function migrateWithDrizzle(database: Database, url?: string) {
  const copy = migrationsWithoutConcurrently();
  try {
    if (database.driver === "pglite") {
      const { migrate } = await import("drizzle-orm/pglite/migrator");
      await migrate(database.db as never, { migrationsFolder: copy.folder });
    } else {
      const { drizzle } = await import("drizzle-orm/postgres-js");
      const { migrate } = await import("drizzle-orm/postgres-js/migrator");
      const client = postgres(url!, { max: 1, onnotice: () => {} });
      try {
        await migrate(drizzle(client), { migrationsFolder: copy.folder });
      } finally {
        await client.end({ timeout: 5 });
      }
    }
    await copy.restoreHashes(database.db);
  } finally {
    copy.remove();
  }
}

describe(`every migration on an empty database (${testDriver})`, () => {
  it("builds what drizzle's migrator built, and writes the journal rows it wrote", async () => {
    const dbs = await emptyDatabases();
    try {
      await migrateWithDrizzle(dbs.drizzle, dbs.drizzleUrl);
      const applied = await migrateDatabase(dbs.ours, dbs.oursUrl);
      expect(applied).toHaveLength(planMigrations(migrationsFolder).length);
      expect(await journalRows(dbs.ours.db)).toEqual(await journalRows(dbs.drizzle.db));
      expect(await schemaFingerprint(dbs.ours.db)).toEqual(await schemaFingerprint(dbs.drizzle.db));
      // Started again, nothing is pending, on either.
      expect(await migrateDatabase(dbs.ours, dbs.oursUrl)).toEqual([]);
      expect(await migrateDatabase(dbs.drizzle, dbs.drizzleUrl)).toEqual([]);
    } finally {
      await dbs.close();
    }
  });
});

describe(`a concurrent index build that was interrupted (${testDriver})`, () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 2 });
  });
  afterAll(() => tdb?.close());

  it("is dropped and built again; a built index and a drop of a missing one are left alone", async () => {
    const { db } = tdb.database;
    await query(db, sql`create table scratch (a int)`);
    await query(db, sql`insert into scratch values (1), (1)`);
    // A unique build over duplicates fails half-way and leaves the index INVALID, as a lock timeout or a crash would.
    await expect(query(db, sql.raw(`create unique index concurrently "scratch_a_idx" on scratch (a)`))).rejects.toThrow();
    const validity = async () => (await query<{ valid: boolean }>(db, sql`select indisvalid as valid from pg_index where indexrelid = to_regclass('scratch_a_idx')`))[0]?.valid;
    expect(await validity()).toBe(false);
    const next = migrationsWith([
      // As drizzle-kit writes it: no IF NOT EXISTS. The migrator finds the index by name.
      { tag: "9001_scratch_index", sql: `CREATE INDEX CONCURRENTLY "scratch_a_idx" ON "scratch" USING btree ("a");--> statement-breakpoint\nDROP INDEX CONCURRENTLY "scratch_gone_idx";` },
    ]);
    try {
      expect(await migrateDatabase(tdb.database, tdb.directUrl ?? tdb.url, { folder: next.folder })).toEqual([{ tag: "9001_scratch_index", attempts: 1 }]);
      expect(await validity()).toBe(true);
      expect((await journalRows(db)).slice(-1)).toEqual(next.rows);
      // PGlite's one connection is the app's: the session's lock timeout is back to its default.
      expect((await query<{ lock_timeout: string }>(db, sql`show lock_timeout`))[0]?.lock_timeout).toBe("0");
    } finally {
      next.remove();
    }
  });
});

describe.skipIf(testDriver !== "postgres")("a migration behind a long transaction (needs TEST_DATABASE_URL)", () => {
  let tdb: TestDatabase;
  let url: string;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 2 });
    url = tdb.directUrl ?? tdb.url!;
  });
  afterAll(() => tdb?.close());

  /** A transaction that reads `issues` (so an ALTER of it waits), once it holds its lock; it commits after `ms`. */
  async function holdIssues(ms: number): Promise<{ done: Promise<void> }> {
    const client = postgres(url, { max: 1, onnotice: () => {} });
    let locked!: () => void;
    const holding = new Promise<void>((r) => (locked = r));
    const done = client
      .begin(async (tx) => {
        await tx`select 1 from issues limit 1`;
        locked();
        await sleep(ms);
      })
      .finally(() => client.end({ timeout: 5 }));
    // A failing test ends before the transaction does; its database is then dropped under it.
    done.catch(() => {});
    await holding;
    return { done };
  }

  it("waits at most its lock timeout each try, backs off, and is applied once the transaction ends", async () => {
    const next = migrationsWith([{ tag: "9002_issues_note", sql: `ALTER TABLE "issues" ADD COLUMN "test_note" text;` }]);
    try {
      const held = await holdIssues(700);
      const retries: number[] = [];
      const t0 = performance.now();
      const applied = await migrateDatabase(tdb.database, url, { folder: next.folder, onRetry: (e) => retries.push(e.attempt) });
      await held.done;
      expect(performance.now() - t0).toBeGreaterThanOrEqual(650);
      expect(applied).toEqual([{ tag: "9002_issues_note", attempts: retries.length + 1 }]);
      expect(retries.length).toBeGreaterThanOrEqual(2);
      expect((await journalRows(tdb.database.db)).slice(-1)).toEqual(next.rows);
      const [column] = await query<{ n: number }>(tdb.database.db, sql`select count(*)::int as n from information_schema.columns where table_name = 'issues' and column_name = 'test_note'`);
      expect(column!.n).toBe(1);
    } finally {
      next.remove();
    }
  });

  it("gives up after its tries with an error that says what to do, records nothing, and the next start applies it", async () => {
    const next = migrationsWith([{ tag: "9003_issues_flag", sql: `ALTER TABLE "issues" ADD COLUMN "test_flag" boolean;` }]);
    try {
      const before = (await journalRows(tdb.database.db)).length;
      const held = await holdIssues(1_000);
      const failure = await migrateDatabase(tdb.database, url, { folder: next.folder, attempts: 3, backoffMs: 20 }).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(MigrationLockTimeout);
      expect((failure as Error).message).toMatch(/^MIGRATION_LOCK_TIMEOUT: migration 9003_issues_flag could not take its locks: 3 tries each waited 50 ms .*the next start tries again/);
      expect(await journalRows(tdb.database.db)).toHaveLength(before);
      await held.done;
      expect(await migrateDatabase(tdb.database, url, { folder: next.folder })).toEqual([{ tag: "9003_issues_flag", attempts: 1 }]);
      expect((await journalRows(tdb.database.db)).slice(-1)).toEqual(next.rows);
    } finally {
      next.remove();
    }
  });
});
