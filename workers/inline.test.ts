import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { createTestDatabase, servicesFor, testConfig, testDriver, type TestDatabase } from "../server/testing/db.ts";
import type { Services } from "../server/context.ts";
import { createLogger } from "../server/log.ts";
import { transactionWithNotices } from "../server/events/index.ts";
import { enqueue, jobHealth } from "../server/outbox/index.ts";
import { mergeCatalogs, retascJobs } from "./catalog.ts";
import { startInlineRunner } from "./inline.ts";
import type { JobRunner } from "./runner.ts";
import type { SweepDefinition } from "./sweeps.ts";
import { enqueueProbe, probeJobs, probeReport } from "./testing/probe.ts";
import { sleep, waitFor } from "../server/testing/wait.ts";

const log = createLogger("silent");
const catalog = mergeCatalogs(retascJobs, probeJobs);

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(() => tdb.close());

function servicesWith(overrides: Record<string, string> = {}): Services {
  return servicesFor(tdb.database, {
    config: testConfig({ OUTBOX_POLL_MS: "600000", JOB_BACKOFF_MS: "50", JOB_LOCK_MS: "2000", ...overrides }),
  });
}

async function withRunner<T>(
  services: Services,
  fn: (runner: JobRunner) => Promise<T>,
  options: { sweeps?: SweepDefinition[]; database?: TestDatabase["database"] } = {},
): Promise<T> {
  const runner = await startInlineRunner({
    services,
    database: options.database ?? tdb.database,
    log,
    catalog,
    sweeps: options.sweeps ?? [],
    exclusive: false,
  });
  try {
    return await fn(runner);
  } finally {
    await runner.stop();
  }
}

const outboxState = (ids: number[]) =>
  query<{ id: string; completed: boolean; failed: boolean; attempts: number; last_error: string | null }>(
    tdb.database.db,
    sql`select id, completed_at is not null as completed, failed_at is not null as failed, attempts, last_error
        from outbox where id in (${sql.join(ids.map((i) => sql`${i}`), sql`, `)}) order by id`,
  );

describe("enqueue", () => {
  it("validates the payload against the shared schema and refuses content", async () => {
    const db = tdb.database.db;
    await expect(
      transactionWithNotices(db, (tx) => enqueue(tx, "notify.issue_event", { orgId: "o", issueId: "i", kind: "done", title: "secret" } as never)),
    ).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(transactionWithNotices(db, (tx) => enqueue(tx, "no.such.job" as never, {} as never))).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
    await expect(
      transactionWithNotices(db, (tx) => enqueue(tx, "notify.issue_event", { orgId: "o", issueId: "i", kind: "exploded" } as never)),
    ).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("writes nothing when the causing transaction rolls back", async () => {
    const db = tdb.database.db;
    const before = await query<{ n: number }>(db, sql`select count(*)::int as n from outbox`);
    await expect(
      transactionWithNotices(db, async (tx) => {
        await enqueue(tx, "notify.issue_event", { orgId: "o", issueId: "i", kind: "done" });
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    const after = await query<{ n: number }>(db, sql`select count(*)::int as n from outbox`);
    expect(Number(after[0]!.n)).toBe(Number(before[0]!.n));
  });
});

describe("in-process runner", () => {
  it("delivers notify.issue_event once per outbox row, woken by NOTIFY (no poll)", async () => {
    const services = servicesWith();
    await withRunner(services, async () => {
      const ids: number[] = [];
      for (let i = 0; i < 20; i++) {
        ids.push(
          await transactionWithNotices(services.db, (tx) =>
            enqueue(tx, "notify.issue_event", { orgId: "org-1", issueId: `issue-${i}`, kind: "assigned", actorId: null }),
          ),
        );
      }
      await waitFor(async () => (await outboxState(ids)).every((r) => r.completed), 10_000, "all rows completed");
      const receipts = await query<{ key: string; runs: number }>(
        services.db,
        sql`select key, runs from job_receipts where key in (${sql.join(ids.map((i) => sql`${`outbox:${i}`}`), sql`, `)})`,
      );
      expect(receipts).toHaveLength(20);
      expect(receipts.every((r) => Number(r.runs) === 1)).toBe(true);
    });
  });

  it("retries a transient failure with exponential backoff, then completes once", async () => {
    const services = servicesWith({ JOB_BACKOFF_MS: "150" });
    await withRunner(services, async () => {
      const started = Date.now();
      const id = await transactionWithNotices(services.db, (tx) => enqueueProbe(tx, "test.probe", { tag: "flaky", failTimes: 2 }));
      await waitFor(async () => (await outboxState([id]))[0]!.completed, 10_000, "probe completed");
      // 150 ms after the first failure, 300 ms after the second.
      expect(Date.now() - started).toBeGreaterThanOrEqual(450);
      const report = await probeReport(services.db);
      expect(report.startsByOutboxId.get(id)).toBe(3);
      expect(report.effects.filter((e) => e.key === `outbox:${id}`)).toEqual([{ key: `outbox:${id}`, runs: 1 }]);
      expect((await outboxState([id]))[0]).toMatchObject({ attempts: 3, last_error: null });
    });
  });

  it("gives up at once on a permanent failure and after JOB_ATTEMPTS on a transient one, keeping both visible", async () => {
    const services = servicesWith({ JOB_ATTEMPTS: "3" });
    const before = await jobHealth(services.db);
    await withRunner(services, async () => {
      const permanent = await transactionWithNotices(services.db, (tx) => enqueueProbe(tx, "test.probe", { tag: "no", permanent: true }));
      const hopeless = await transactionWithNotices(services.db, (tx) => enqueueProbe(tx, "test.probe", { tag: "never", failTimes: 99 }));
      await waitFor(async () => (await outboxState([permanent, hopeless])).every((r) => r.failed), 30_000, "both failed"); // three attempts with backoff: slow on a loaded machine
      const [p, h] = await outboxState([permanent, hopeless]);
      expect(p).toMatchObject({ attempts: 1, last_error: "INVALID_INPUT" });
      expect(h).toMatchObject({ attempts: 3, last_error: "Error" });
    });
    const after = await jobHealth(services.db);
    expect(after.failed - before.failed).toBe(2);
  });

  it("lets an in-flight job finish on stop", async () => {
    const services = servicesWith();
    let id = 0;
    await withRunner(services, async () => {
      id = await transactionWithNotices(services.db, (tx) => enqueueProbe(tx, "test.probe", { tag: "slow", sleepMs: 700 }));
      await waitFor(async () => (await probeReport(services.db)).startsByOutboxId.get(id), 5_000, "probe started");
    });
    expect((await outboxState([id]))[0]!.completed).toBe(true);
  });

  it("runs a sweep once per tick however many runners share the database", async () => {
    const runs: number[] = [];
    const sweep: SweepDefinition = {
      name: `test.sweep.${Math.random().toString(36).slice(2, 8)}`,
      everyMs: 200,
      run: async () => {
        runs.push(Date.now());
        return { ran: 1 };
      },
    };
    const services = servicesWith();
    const other = await tdb.openAnother();
    const runners = await Promise.all([
      startInlineRunner({ services, database: tdb.database, log, catalog, sweeps: [sweep], exclusive: false }),
      startInlineRunner({ services: { ...services, db: other.db }, database: other, log, catalog, sweeps: [sweep], exclusive: false }),
      startInlineRunner({ services, database: tdb.database, log, catalog, sweeps: [sweep], exclusive: false }),
    ]);
    await sleep(2_100); // a fixed stretch of about ten ticks: their count is bounded both ways
    await Promise.all(runners.map((r) => r.stop()));
    const ticks = await query<{ key: string; runs: number }>(
      services.db,
      sql`select key, runs from job_receipts where job = ${sweep.name}`,
    );
    // Each tick ran once, however many runners reached it (under load a runner may miss one).
    expect(runs.length).toBe(ticks.length);
    expect(ticks.length).toBeGreaterThanOrEqual(5);
    expect(ticks.length).toBeLessThanOrEqual(12);
    expect(ticks.some((t) => Number(t.runs) > 1)).toBe(true);
  });
});

describe.runIf(testDriver === "postgres")("in-process runners on one PostgreSQL", () => {
  it("share the outbox: 200 jobs, each takes effect once", async () => {
    const services = servicesWith({ JOB_CONCURRENCY: "4" });
    const pools = await Promise.all([tdb.openAnother(), tdb.openAnother(), tdb.openAnother()]);
    const runners = await Promise.all(
      pools.map((p) =>
        startInlineRunner({ services: { ...services, db: p.db }, database: p, log, catalog, sweeps: [], exclusive: false }),
      ),
    );
    try {
      const ids = await transactionWithNotices(services.db, async (tx) => {
        const out: number[] = [];
        for (let i = 0; i < 200; i++) out.push(await enqueueProbe(tx, "test.probe", { tag: `p${i}`, sleepMs: 5 }));
        return out;
      });
      await waitFor(async () => (await outboxState(ids)).every((r) => r.completed), 30_000, "all completed");
      const report = await probeReport(services.db);
      const mine = report.effects.filter((e) => ids.includes(Number(e.key.split(":")[1])));
      expect(mine).toHaveLength(200);
      expect(mine.every((e) => e.runs === 1)).toBe(true);
      expect(ids.every((id) => report.startsByOutboxId.get(id) === 1)).toBe(true);
      const onceEach = await query<{ n: number }>(services.db, sql`select count(*)::int as n from outbox where id in (${sql.join(ids.map((i) => sql`${i}`), sql`, `)}) and attempts = 1`);
      expect(Number(onceEach[0]!.n)).toBe(200);
    } finally {
      await Promise.all(runners.map((r) => r.stop()));
    }
  });
});
