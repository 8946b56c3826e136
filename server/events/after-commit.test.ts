import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../testing/db.ts";
import { EVENTS_CHANNEL, notifyPublisher, transactionWithNotices } from "./index.ts";

/**
 * Notices leave after commit, never from inside a transaction (issue 36): a NOTIFY inside a
 * transaction takes PostgreSQL's global notify lock at commit and holds it through the flush,
 * serialising every writing transaction of the cluster.
 */
let tdb: TestDatabase;
const received: string[] = [];
let stop: () => Promise<void>;

beforeAll(async () => {
  tdb = await createTestDatabase();
  stop = await tdb.database.listen(EVENTS_CHANNEL, (payload) => received.push(payload));
});
afterAll(async () => {
  await stop?.();
  await tdb?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function eventually(check: () => boolean, ms = 5_000) {
  const until = Date.now() + ms;
  while (!check() && Date.now() < until) await sleep(20);
  return check();
}

describe("notices after commit", () => {
  it("an event published in a transaction is sent once it has committed, and never for one that rolled back", async () => {
    const db = tdb.database.db;
    await transactionWithNotices(db, async (tx) => {
      await notifyPublisher.publish(tx, { orgId: "o", kind: "test.committed" });
      await tx.execute(sql`select 1`);
    });
    expect(await eventually(() => received.some((p) => p.includes("test.committed")))).toBe(true);

    await transactionWithNotices(db, async (tx) => {
      await notifyPublisher.publish(tx, { orgId: "o", kind: "test.rolled-back" });
      throw new Error("roll back");
    }).catch(() => {});
    await sleep(200); // a window for the rolled-back notice, which must not come
    expect(received.some((p) => p.includes("test.rolled-back"))).toBe(false);
  });

  it("nothing leaves while the transaction is still open", async () => {
    const db = tdb.database.db;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const open = transactionWithNotices(db, async (tx) => {
      await notifyPublisher.publish(tx, { orgId: "o", kind: "test.held-open" });
      await held;
    });
    await sleep(150); // a window for the notice, which must not leave while the transaction is open
    expect(received.some((p) => p.includes("test.held-open"))).toBe(false);
    release();
    await open;
    expect(await eventually(() => received.some((p) => p.includes("test.held-open")))).toBe(true);
  });

  it("publishing inside a transaction not opened for notices is refused, so no path can NOTIFY before its commit", async () => {
    const db = tdb.database.db;
    await expect(db.transaction((tx) => notifyPublisher.publish(tx, { orgId: "o", kind: "test.inside" }))).rejects.toThrow(/transactionWithNotices/);
  });

  it("no server module sends a NOTIFY but the events module (the outbox's wake-up goes through it too)", () => {
    const root = path.resolve(import.meta.dirname, "..");
    const senders = (fs.readdirSync(root, { recursive: true }) as string[])
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts") && !file.startsWith("testing"))
      .filter((file) => /pg_notify/.test(fs.readFileSync(path.join(root, file), "utf8")))
      .map((file) => file.split(path.sep).join("/"))
      .sort();
    expect(senders).toEqual(["events/index.ts"]);
  });
});
