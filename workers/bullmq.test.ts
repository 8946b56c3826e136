import crypto from "node:crypto";
import { Queue } from "bullmq";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { servicesFor, testConfig, testDriver } from "../server/testing/db.ts";
import type { Services } from "../server/context.ts";
import { createLogger } from "../server/log.ts";
import { transactionWithNotices } from "../server/events/index.ts";
import { enqueue, jobHealth } from "../server/outbox/index.ts";
import { QUEUE_NAME, startBullmqRunner } from "./bullmq.ts";
import { mergeCatalogs, retascJobs } from "./catalog.ts";
import { outboxJobId } from "./relay.ts";
import type { JobRunner } from "./runner.ts";
import { enqueueProbe, probeJobs, probeReport } from "./testing/probe.ts";
import { PrivateRedis, redisServerAvailable } from "../server/testing/redis.ts";
import { redisTestsCanRun, uniquePrefix, useDatabaseAndRedis } from "./testing/redis-url.ts";
import { spawnWorker } from "./testing/spawn.ts";
import { sleep, waitFor } from "../server/testing/wait.ts";
import { seedOrg } from "../server/testing/fixtures.ts";
import { setOrgFrozen } from "../server/orgs/freeze.ts";

const log = createLogger("silent");
const catalog = mergeCatalogs(retascJobs, probeJobs);

const idsSql = (ids: number[]) => sql.join(ids.map((i) => sql`${i}`), sql`, `);

describe.runIf(testDriver === "postgres" && redisTestsCanRun)("BullMQ runner (PostgreSQL + Redis)", () => {
  const stack = useDatabaseAndRedis();

  const servicesWith = (overrides: Record<string, string> = {}): Services =>
    servicesFor(stack.tdb.database, {
      config: testConfig({
        DATABASE_URL: stack.tdb.url!,
        BULLMQ_PREFIX: uniquePrefix(),
        OUTBOX_POLL_MS: "600000",
        JOB_BACKOFF_MS: "100",
        JOB_LOCK_MS: "2000",
        ...overrides,
      }),
    });

  const start = (services: Services, redisUrl: string): Promise<JobRunner> =>
    startBullmqRunner({ services, database: stack.tdb.database, log, catalog, sweeps: [], redisUrl });

  const outboxState = (ids: number[]) =>
    query<{ id: string; relayed: boolean; completed: boolean; failed: boolean; last_error: string | null }>(
      stack.tdb.database.db,
      sql`select id, relayed_at is not null as relayed, completed_at is not null as completed,
                 failed_at is not null as failed, last_error
          from outbox where id in (${idsSql(ids)}) order by id`,
    );

  it("relays on NOTIFY (no poll) and delivers each outbox row once", async () => {
    const services = servicesWith();
    const runner = await start(services, stack.redis.url);
    try {
      const ids: number[] = [];
      for (let i = 0; i < 25; i++) {
        ids.push(
          await transactionWithNotices(services.db, (tx) =>
            enqueue(tx, "notify.issue_event", { orgId: "org-1", issueId: `issue-${i}`, kind: "review" }),
          ),
        );
      }
      await waitFor(async () => (await outboxState(ids)).every((r) => r.completed), 15_000, "all completed");
      const receipts = await query<{ runs: number }>(
        services.db,
        sql`select runs from job_receipts where key in (${sql.join(ids.map((i) => sql`${`outbox:${i}`}`), sql`, `)})`,
      );
      expect(receipts.map((r) => Number(r.runs))).toEqual(Array(25).fill(1));
      const queue = new Queue(QUEUE_NAME, { prefix: services.config.BULLMQ_PREFIX, connection: { url: stack.redis.url } });
      try {
        const job = await queue.getJob(outboxJobId(ids[0]!));
        expect(job?.data).toEqual({
          outboxId: ids[0],
          payload: { orgId: "org-1", issueId: "issue-0", kind: "review" },
        });
      } finally {
        await queue.close();
      }
    } finally {
      await runner.stop();
    }
  });

  it("leaves a frozen org's jobs alone, relayed or not, and runs each once after the freeze (decision 110)", async () => {
    // The relay looks again by its poll (nothing commits to wake it when the freeze ends).
    const services = servicesWith({ OUTBOX_POLL_MS: "500" });
    const org = await seedOrg(services);
    await setOrgFrozen(services.db, org.orgId, true);
    const runner = await start(services, stack.redis.url);
    const queue = new Queue(QUEUE_NAME, { prefix: services.config.BULLMQ_PREFIX, connection: { url: stack.redis.url } });
    try {
      const probe = (tag: string) => transactionWithNotices(services.db, (tx) => enqueueProbe(tx, "test.probe", { tag, orgId: org.orgId }));
      // Enqueued during the freeze: the relay leaves it in the outbox.
      const waiting = await probe("waiting");
      // Relayed just before the freeze: in the queue already, where the worker puts it off.
      const relayed = await probe("relayed");
      await services.db.execute(sql`update outbox set relayed_at = now() where id = ${relayed}`);
      await queue.add("test.probe", { outboxId: relayed, payload: { tag: "relayed", sleepMs: 0, failTimes: 0, permanent: false, orgId: org.orgId } }, { jobId: outboxJobId(relayed), attempts: 3 });
      // The worker has put the relayed job off, and the relay has made a pass since both were
      // enqueued: a job of no org, enqueued after them, was relayed and ran.
      await waitFor(async () => (await (await queue.getJob(outboxJobId(relayed)))?.getState()) === "delayed", 15_000, "the worker to put the frozen org's job off");
      const later = await transactionWithNotices(services.db, (tx) => enqueueProbe(tx, "test.probe", { tag: "later" }));
      await waitFor(async () => (await outboxState([later]))[0]!.completed, 15_000, "a job of no org, enqueued after, to run");
      expect(await outboxState([waiting, relayed])).toMatchObject([
        { relayed: false, completed: false, failed: false },
        { relayed: true, completed: false, failed: false },
      ]);
      const during = (await probeReport(services.db)).startsByOutboxId;
      expect([during.get(waiting), during.get(relayed)]).toEqual([undefined, undefined]);
      expect(await (await queue.getJob(outboxJobId(relayed)))?.getState()).toBe("delayed");

      await setOrgFrozen(services.db, org.orgId, false);
      await waitFor(async () => (await outboxState([waiting, relayed])).every((r) => r.completed), 20_000, "both completed");
      const after = (await probeReport(services.db)).startsByOutboxId;
      expect([after.get(waiting), after.get(relayed)]).toEqual([1, 1]);
    } finally {
      await queue.close();
      await runner.stop();
    }
  });

  it("retries transient failures with backoff and keeps permanent failures (UnrecoverableError) in the failed set", async () => {
    const services = servicesWith();
    const before = await jobHealth(services.db);
    const runner = await start(services, stack.redis.url);
    const queue = new Queue(QUEUE_NAME, { prefix: services.config.BULLMQ_PREFIX, connection: { url: stack.redis.url } });
    try {
      const flaky = await transactionWithNotices(services.db, (tx) => enqueueProbe(tx, "test.probe", { tag: "flaky", failTimes: 2 }));
      const doomed = await transactionWithNotices(services.db, (tx) => enqueueProbe(tx, "test.probe", { tag: "doomed", permanent: true }));
      await waitFor(async () => {
        const [f, d] = await outboxState([flaky, doomed]);
        return f!.completed && d!.failed;
      }, 15_000, "flaky completed and doomed failed");
      const report = await probeReport(services.db);
      expect(report.startsByOutboxId.get(flaky)).toBe(3);
      expect(report.startsByOutboxId.get(doomed)).toBe(1);
      expect(report.effects.filter((e) => e.key === `outbox:${flaky}`)).toEqual([{ key: `outbox:${flaky}`, runs: 1 }]);
      const failedJob = await queue.getJob(outboxJobId(doomed));
      expect(await failedJob!.getState()).toBe("failed");
      expect(failedJob!.attemptsMade).toBe(1);
      expect((await outboxState([doomed]))[0]!.last_error).toBe("UnrecoverableError");
      expect((await jobHealth(services.db)).failed - before.failed).toBe(1);
      expect(await queue.getFailedCount()).toBe(1);
    } finally {
      await queue.close();
      await runner.stop();
    }
  });

  describe.runIf(redisServerAvailable)("with a Redis that goes away", () => {
    it("keeps writes succeeding while Redis is down and delivers every row exactly once when it returns", async () => {
      const privateRedis = await PrivateRedis.start();
      const services = servicesWith({ JOB_CONCURRENCY: "1", OUTBOX_POLL_MS: "300", OUTBOX_REDELIVER_MS: "1500" });
      const runner = await start(services, privateRedis.url);
      const write = (tag: string, sleepMs = 0) =>
        transactionWithNotices(services.db, (tx) => enqueueProbe(tx, "test.probe", { tag, sleepMs }));
      try {
        const ids: number[] = [];
        for (let i = 0; i < 10; i++) ids.push(await write(`before-${i}`));
        await waitFor(async () => (await outboxState(ids)).every((r) => r.completed), 15_000, "first batch delivered");

        // One slow job holds the only worker slot, so the next ones sit in Redis when it dies:
        // a Redis without persistence loses them, and the relay must hand them over again.
        const slow = await write("slow", 1_500);
        await waitFor(async () => (await probeReport(services.db)).startsByOutboxId.get(slow), 5_000, "slow job started");
        const queued: number[] = [];
        for (let i = 0; i < 5; i++) queued.push(await write(`queued-${i}`));
        await waitFor(async () => (await outboxState(queued)).every((r) => r.relayed), 5_000, "queued rows relayed");
        await privateRedis.stop();

        const during: number[] = [];
        const writeStarted = Date.now();
        for (let i = 0; i < 30; i++) during.push(await write(`during-${i}`));
        const writeMs = Date.now() - writeStarted;
        expect(writeMs).toBeLessThan(3_000);
        // A fixed window, as nothing must happen in it: the relay's polls (every 300 ms) find Redis
        // down and relay none of these rows.
        await sleep(1_500);
        const pendingDuring = await outboxState(during);
        expect(pendingDuring.every((r) => !r.relayed && !r.completed)).toBe(true);

        const restartedAt = Date.now();
        await privateRedis.start();
        const all = [...ids, slow, ...queued, ...during];
        await waitFor(async () => (await outboxState(all)).every((r) => r.completed), 30_000, "everything delivered");
        const report = await probeReport(services.db);
        const effects = report.effects.filter((e) => all.includes(Number(e.key.split(":")[1])));
        expect(effects).toHaveLength(all.length);
        expect(effects.every((e) => e.runs === 1)).toBe(true);
        expect((await outboxState(all)).some((r) => r.failed)).toBe(false);
        // The rows Redis lost were handed over again after it came back.
        const requeued = await query<{ relayed_at: string | Date }>(
          services.db,
          sql`select relayed_at from outbox where id in (${idsSql(queued)})`,
        );
        expect(requeued.every((r) => new Date(r.relayed_at).getTime() >= restartedAt - 50)).toBe(true);
      } finally {
        await runner.stop();
        await privateRedis.close();
      }
    });
  });

  it("runs a job again after its worker process is SIGKILLed mid-job; it takes effect once", async () => {
    const prefix = uniquePrefix();
    const env = {
      DATABASE_URL: stack.tdb.url!,
      REDIS_URL: stack.redis.url,
      BULLMQ_PREFIX: prefix,
      RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64"),
      JOB_LOCK_MS: "1500",
      OUTBOX_POLL_MS: "500",
    };
    const first = spawnWorker(env);
    let second: ReturnType<typeof spawnWorker> | null = null;
    try {
      const id = await transactionWithNotices(stack.tdb.database.db, (tx) => enqueueProbe(tx, "test.probe", { tag: "crash", sleepMs: 3_000 }));
      await waitFor(
        async () => (await probeReport(stack.tdb.database.db)).startsByOutboxId.get(id),
        30_000,
        `the job started (worker said: ${first.output()})`,
      );
      await first.kill();
      expect(first.child.signalCode).toBe("SIGKILL");
      expect((await outboxState([id]))[0]!.completed).toBe(false);

      second = spawnWorker(env);
      await waitFor(async () => (await outboxState([id]))[0]!.completed, 30_000, "the job completed after the crash");
      const report = await probeReport(stack.tdb.database.db);
      expect(report.startsByOutboxId.get(id)).toBe(2);
      expect(report.effects.filter((e) => e.key === `outbox:${id}`)).toEqual([{ key: `outbox:${id}`, runs: 1 }]);
      expect(await second.terminate()).toBe(0);
    } finally {
      await first.kill();
      await second?.kill();
    }
  });
});
