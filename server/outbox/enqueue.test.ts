import { sql } from "drizzle-orm";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { createTestDatabase, type TestDatabase } from "../testing/db.ts";
import { transactionWithNotices } from "../events/index.ts";
import { OUTBOX_CHANNEL, createEnqueue } from "./index.ts";

/**
 * The relay's wake-up leaves after the job's row has committed, never from inside the
 * transaction (a NOTIFY there serialises the cluster's commits, issue 36).
 */
let tdb: TestDatabase;
const enqueue = createEnqueue({ "test.probe": z.object({ n: z.number() }) });
const wakeUps: number[] = [];
let stop: () => Promise<void>;

beforeAll(async () => {
  tdb = await createTestDatabase();
  stop = await tdb.database.listen(OUTBOX_CHANNEL, async () => {
    // What the relay would find when woken: the committed rows of this test's jobs.
    const rows = await query<{ n: number }>(tdb.database.db, sql`select count(*)::int as n from outbox where job = 'test.probe'`);
    wakeUps.push(rows[0]!.n);
  });
});
afterAll(async () => {
  await stop?.();
  await tdb?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("enqueue", () => {
  it("wakes the relay once per transaction, after the rows are committed", async () => {
    await transactionWithNotices(tdb.database.db, async (tx) => {
      await enqueue(tx, "test.probe", { n: 1 });
      await enqueue(tx, "test.probe", { n: 2 });
    });
    for (let i = 0; i < 100 && wakeUps.length === 0; i++) await sleep(20);
    await sleep(100); // a window for a second wake-up, which must not come
    expect(wakeUps).toEqual([2]);
  });

  it("is refused inside a transaction not opened for notices, and leaves no row", async () => {
    await expect(tdb.database.db.transaction((tx) => enqueue(tx, "test.probe", { n: 3 }))).rejects.toThrow(/transactionWithNotices/);
    const rows = await query<{ n: number }>(tdb.database.db, sql`select count(*)::int as n from outbox where payload->>'n' = '3'`);
    expect(rows[0]!.n).toBe(0);
  });

  it("outside a transaction, inserts and wakes the relay after the insert", async () => {
    wakeUps.length = 0;
    await enqueue(tdb.database.db, "test.probe", { n: 4 });
    for (let i = 0; i < 100 && wakeUps.length === 0; i++) await sleep(20);
    expect(wakeUps).toEqual([3]);
  });
});
