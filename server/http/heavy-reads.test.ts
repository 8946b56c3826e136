import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { callOk } from "../mcp/testing.ts";
import { testDriver } from "../testing/db.ts";
import { useDashApp } from "../testing/dash.ts";
import { createHeavyReads, dashCaller, HEAVY_READS_FULL, HEAVY_READS_SHARE } from "./heavy-reads.ts";

describe("one caller's share of the heavy reads (decision 061)", () => {
  it("a caller holding its share is refused at once (429) while another still queues; released, the share is free again", async () => {
    const reads = createHeavyReads({ HEAVY_READS_AT_ONCE: 1, HEAVY_READS_QUEUED: 10, HEAVY_READS_PER_CALLER: 2 });
    const slot = async (caller: string) => {
      const got = await reads.acquire(caller);
      if (typeof got !== "function") throw new Error(`refused ${got.status}`);
      return got;
    };
    const order: string[] = [];
    const first = await slot("person:a");
    const secondOfA = slot("person:a").then((release) => (order.push("a"), release));
    // A's two are one running and one queued: its third is refused without waiting.
    expect(await reads.acquire("person:a")).toBe(HEAVY_READS_SHARE);
    const ofB = slot("person:b").then((release) => (order.push("b"), release));
    first();
    first(); // a release is given back once only
    const releaseSecond = await secondOfA;
    expect(order).toEqual(["a"]);
    releaseSecond();
    const releaseB = await ofB;
    expect(order).toEqual(["a", "b"]);
    releaseB();
    // Every share given back: A may hold two again.
    const firstAgain = await slot("person:a");
    const secondAgain = slot("person:a");
    firstAgain();
    expect(typeof (await secondAgain)).toBe("function");
  });

  it("past the queue, anyone is refused 503", async () => {
    const reads = createHeavyReads({ HEAVY_READS_AT_ONCE: 1, HEAVY_READS_QUEUED: 1, HEAVY_READS_PER_CALLER: 8 });
    await reads.acquire("person:a");
    void reads.acquire("person:b");
    expect(await reads.acquire("person:c")).toBe(HEAVY_READS_FULL);
  });

  it("a Dash caller is its session, by digest, else its address", () => {
    const caller = dashCaller("theme=dark; better-auth.session_token=abc.def", "127.0.0.1");
    expect(caller).toMatch(/^session:/);
    expect(caller).not.toContain("abc");
    expect(dashCaller("__Secure-better-auth.session_token=abc.def", "10.0.0.1")).toBe(caller);
    expect(dashCaller(undefined, "127.0.0.1")).toBe("address:127.0.0.1");
  });
});

/**
 * The heavy reads' slots (server/http/heavy-reads.ts) in the built app over real HTTP, one slot
 * and one place in the queue. The readers are held where no timing decides: the test locks the
 * comments table, so a Dash issue page that has its slot waits in the database. While it does,
 * a list_comments call waits for the slot in the process (it never reaches the database), the
 * next Dash page and list_comments are refused 503 RATE_LIMITED with Retry-After, and /healthz
 * answers at once. Unlocked, the two queued reads are answered in their order.
 */
describe.skipIf(testDriver !== "postgres")("heavy reads wait their turn, /healthz never does (needs TEST_DATABASE_URL)", () => {
  const METRICS_TOKEN = "heavy-reads-test-metrics-token";
  const app = useDashApp({ HEAVY_READS_AT_ONCE: "1", HEAVY_READS_QUEUED: "1", METRICS_TOKEN });

  const gauges = async () => {
    const text = await (await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\d+)`, "m").exec(text)?.[1]);
    return { running: value("retasc_heavy_reads_running"), queued: value("retasc_heavy_reads_queued") };
  };
  /** Backends of the app waiting on a lock: the reads that reached the database. */
  const waitingOnLock = async () => {
    const [row] = await query<{ n: number }>(app.db, sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
    return row!.n;
  };
  const until = async (what: string, done: () => Promise<boolean>) => {
    for (const deadline = Date.now() + 30_000; !(await done()); ) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it("queues a list_comments behind a Dash page, refuses past the queue, answers /healthz meanwhile, then serves both in order", async () => {
    const owner = await app.person("heavy", "HVY");
    const { identifier } = await callOk(owner.agent, "save_issue", { title: "Read by many", work: true, changeType: "feat", noDependency: "test" });
    await callOk(owner.agent, "save_comment", { issue: identifier, body: "the only comment" });
    await owner.agent.close();
    const dashPage = () => fetch(`${app.url}/dash/issues/${identifier}`, { headers: { cookie: owner.cookie } });
    const listComments = () =>
      fetch(`${app.url}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${owner.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_comments", arguments: { issue: identifier } } }),
      });

    let unlock!: () => void;
    const unlocked = new Promise<void>((resolve) => (unlock = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holder = app.db.transaction(async (tx) => {
      await tx.execute(sql`lock table comments in access exclusive mode`);
      locked();
      await unlocked;
    });
    await lockTaken;
    try {
      const answered: string[] = [];
      const first = dashPage().then(async (r) => (answered.push("dash page"), { status: r.status, html: await r.text() }));
      await until("the Dash page to wait on the lock", async () => (await waitingOnLock()) === 1);
      const second = listComments().then(async (r) => (answered.push("list_comments"), { status: r.status, body: await r.json() }));
      await until("list_comments to be queued", async () => {
        const now = await gauges();
        return now.running === 1 && now.queued === 1;
      });
      // Queued in the process: it has not reached the database.
      expect(await waitingOnLock()).toBe(1);

      const refusedPage = await dashPage();
      expect(refusedPage.status).toBe(503);
      expect(refusedPage.headers.get("retry-after")).toBe("1");
      expect(await refusedPage.json()).toMatchObject({ error: { code: "RATE_LIMITED", hint: "Retry after 1 s." } });
      const refusedList = await listComments();
      expect(refusedList.status).toBe(503);
      expect(refusedList.headers.get("retry-after")).toBe("1");
      expect(await refusedList.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32000, message: expect.stringContaining("Retry after 1 s.") } });

      const health = await fetch(`${app.url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ ok: true });
      // A light page and a light tool take no slot either.
      expect((await fetch(`${app.url}/index.md`)).status).toBe(200);
      expect(answered).toEqual([]);

      unlock();
      const [page, list] = await Promise.all([first, second]);
      expect(page.status).toBe(200);
      expect(page.html).toContain("the only comment");
      expect(list.status).toBe(200);
      expect(list.body.result.structuredContent.comments).toHaveLength(1);
      expect(answered).toEqual(["dash page", "list_comments"]);
      await until("the slots to be free", async () => {
        const now = await gauges();
        return now.running === 0 && now.queued === 0;
      });
    } finally {
      unlock();
      await holder;
    }
  });
});
