import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testDriver, type TestDatabase } from "../server/testing/db.ts";
import { query } from "./client.ts";

/**
 * The PostgreSQL driver's failure paths, as patched (patches/postgres+3.4.9.patch, applied by
 * postinstall). When a connection dies inside a transaction (a server restart or failover),
 * postgres.js 3.4.9 sent the transaction's rollback on the dead connection and threw from a
 * timer, killing the process. Found by the swarm's PostgreSQL restart.
 */
describe.skipIf(testDriver !== "postgres")("the PostgreSQL driver when things fail (needs TEST_DATABASE_URL)", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 1 });
  });
  afterAll(async () => {
    await tdb?.close();
  });

  const killOwnBackend = sql`select pg_terminate_backend(pg_backend_pid())`;

  it("fails the transaction with a catchable error, whatever the transaction does next, and the pool carries on", async () => {
    const { db } = tdb.database;
    const attempts: ((tx: typeof db) => Promise<unknown>)[] = [
      // The statement fails and the error propagates: the driver rolls back on the dead connection.
      async (tx) => tx.execute(killOwnBackend),
      // The failure is swallowed: the driver commits on the dead connection.
      async (tx) => tx.execute(killOwnBackend).catch(() => null),
      // More statements go out on the dead connection.
      async (tx) => {
        await tx.execute(killOwnBackend).catch(() => null);
        await new Promise((r) => setTimeout(r, 20));
        await tx.execute(sql`select 1`);
      },
    ];
    for (const attempt of attempts) {
      await expect(db.transaction((tx) => attempt(tx as typeof db) as Promise<unknown>)).rejects.toMatchObject({
        message: expect.stringMatching(/CONNECTION_CLOSED|terminating connection/),
      });
      // Give a queued write its turn: unpatched, it threw here and took the process down.
      await new Promise((r) => setTimeout(r, 50));
      const rows = await query<{ ok: number }>(db, sql`select 1 as ok`);
      expect(rows[0]?.ok).toBe(1);
    }
  });

  // postgres.js 3.4.9 counted a failed query's rows into the next query on its connection: the
  // rows sent before the error were never reset, so the next result began with that many empty
  // slots (the patch resets the count). Found by server/queue/batching.test.ts.
  it("a query that fails after some of its rows leaves the next query's rows intact", async () => {
    const { db } = tdb.database;
    const numbers = (list: string) => query<{ n: number }>(db, sql`select v::int as n from unnest(${list}::text[]) as t(v)`);
    await expect(numbers("{1,2,oops}")).rejects.toMatchObject({ cause: { code: "22P02" } }); // invalid input syntax for integer
    expect(await numbers("{7}")).toEqual([{ n: 7 }]);
  });
});

/**
 * What `retasc_db_pool_busy` reports (server/metrics): the pool's count of open transactions and
 * statements outside one, back to 0 when they end. A scrape samples it at one instant, so a run's
 * scrapes can find it 0 each time (swarm/swarm.test.ts leaves it out of what must move); this holds it.
 */
describe.skipIf(testDriver !== "postgres")("the pool's use (needs TEST_DATABASE_URL)", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 3 });
  });
  afterAll(async () => {
    await tdb?.close();
  });

  it("counts each open transaction and each statement in flight, and falls back to 0", async () => {
    const { db } = tdb.database;
    const pool = () => tdb.database.pool();
    expect(pool()).toEqual({ max: 3, inUse: 0 });
    let inside = 0;
    const statement = query(db, sql`select pg_sleep(0.2)`);
    await new Promise((r) => setTimeout(r, 50));
    await db.transaction(async (tx) => {
      await tx.execute(sql`select 1`);
      inside = pool().inUse;
    });
    expect(inside).toBe(2);
    await statement;
    expect(pool().inUse).toBe(0);
  });
});
