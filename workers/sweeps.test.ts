import crypto from "node:crypto";
import { Queue } from "bullmq";
import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { activity, issues } from "../db/schema/index.ts";
import { createTestDatabase, servicesFor, testConfig, testDriver, type TestDatabase } from "../server/testing/db.ts";
import type { Services } from "../server/context.ts";
import { Keyring } from "../server/crypto/index.ts";
import { listIssues, saveIssue } from "../server/issues/index.ts";
import { createLogger } from "../server/log.ts";
import { claimIssue } from "../server/queue/index.ts";
import { seedOrg } from "../server/testing/fixtures.ts";
import { QUEUE_NAME } from "./bullmq.ts";
import { startWorkers } from "./index.ts";
import { redisTestsCanRun, testRedis, uniquePrefix } from "./testing/redis-url.ts";
import { spawnWorker, type WorkerProcess } from "./testing/spawn.ts";
import { waitFor } from "../server/testing/wait.ts";

/**
 * The sweeps against the real dispatch engine, with nobody calling: an expired lease shows as
 * reclaimed in the activity log, and an issue crossing 75% of its deadline window moves up the
 * stored order, each within a sweep interval (1 s here; 30 s and 60 s by default, so within
 * a minute). Once in the embedded mode (in-process runner, no Redis) and once with three
 * BullMQ worker processes.
 */
const SWEEP_ENV = { RECLAIM_SWEEP_MS: "1000", SLA_SWEEP_MS: "1000", LEASE_TTL_SECONDS: "1" };
const LIMIT_MS = 60_000;

async function arrange(services: Services) {
  const org = await seedOrg(services, { prefix: `S${crypto.randomBytes(3).toString("hex").toUpperCase()}` });
  const ctx = org.agents.alice.ctx;
  const create = (title: string, extra: Record<string, unknown> = {}) =>
    saveIssue(ctx, { title, work: true, changeType: "feat", noDependency: "standalone", ...extra });
  const held = await create("held by an agent that dies");
  await claimIssue(ctx, { identifier: held.identifier });
  const steady = await create("medium priority, no deadline", { priority: 3 });
  // No priority, due in 8 s: the 75% mark (floor high, above medium) comes 6 s from now.
  const due = await create("no priority, due soon", { dueAt: Date.now() + 8_000 });
  const [heldRow] = await services.db.select({ id: issues.id }).from(issues).where(eq(issues.identifier, held.identifier));
  const [dueRow] = await services.db.select({ id: issues.id }).from(issues).where(eq(issues.identifier, due.identifier));
  const order = async () =>
    (await listIssues(ctx, {})).issues
      .map((i) => i.identifier)
      .filter((id) => id === steady.identifier || id === due.identifier);
  return { org, held, steady, due, heldId: heldRow!.id, dueId: dueRow!.id, order, arrangedAt: Date.now() };
}

async function expectSweepsToAct(services: Services, s: Awaited<ReturnType<typeof arrange>>) {
  expect(await s.order()).toEqual([s.steady.identifier, s.due.identifier]);
  const reclaims = () =>
    services.db
      .select({ id: activity.id, actorId: activity.actorId })
      .from(activity)
      .where(and(eq(activity.issueId, s.heldId), eq(activity.kind, "reclaimed")));
  await waitFor(async () => (await reclaims()).length > 0, LIMIT_MS, "the reclaim in the activity log");
  const reclaimedAfterMs = Date.now() - s.arrangedAt;
  const [row] = await services.db.select().from(issues).where(eq(issues.id, s.heldId));
  expect(row!.leaseId).toBeNull();

  await waitFor(async () => (await s.order())[0] === s.due.identifier, LIMIT_MS, "the due issue moving up");
  const movedAfterMs = Date.now() - s.arrangedAt;
  const [dueRow] = await services.db.select().from(issues).where(eq(issues.id, s.dueId));
  expect(["warning", "breaching", "breached"]).toContain(dueRow!.slaState);
  const slaEntries = await services.db
    .select({ id: activity.id })
    .from(activity)
    .where(and(eq(activity.issueId, s.dueId), eq(activity.kind, "sla_changed")));
  expect(slaEntries.length).toBeGreaterThanOrEqual(1);

  // The lease lapsed 1 s after the claim and the 75% mark came at 6 s; with 1 s sweeps each
  // shows up about a second later (the slack is for a loaded machine).
  expect(reclaimedAfterMs).toBeLessThan(1_000 + 5_000);
  expect(movedAfterMs).toBeLessThan(6_000 + 5_000);
  expect((await reclaims()).length).toBe(1);
  return { reclaimedAfterMs, movedAfterMs };
}

describe("sweeps in the embedded mode (in-process runner, no Redis)", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(() => tdb.close());

  it("records the reclaim of an expired lease and re-ranks a deadline crossing, with no agent call", async () => {
    const services = servicesFor(tdb.database, { config: testConfig(SWEEP_ENV) });
    expect(services.config.mode).toBe("embedded");
    const runner = await startWorkers({ services, database: tdb.database, log: createLogger("silent") });
    try {
      expect(runner.kind).toBe("inline");
      const s = await arrange(services);
      const timing = await expectSweepsToAct(services, s);
      console.log(`embedded (${testDriver}): reclaimed after ${timing.reclaimedAfterMs} ms, re-ranked after ${timing.movedAfterMs} ms`);
    } finally {
      await runner.stop();
    }
  });
});

describe.runIf(testDriver === "postgres" && redisTestsCanRun)("sweeps with three BullMQ worker processes", () => {
  let tdb: TestDatabase;
  let redis: { url: string; close(): Promise<void> };
  let workers: WorkerProcess[] = [];
  let services: Services;
  let queue: Queue;
  let startedAt = 0;
  const prefix = uniquePrefix();

  beforeAll(async () => {
    tdb = await createTestDatabase();
    redis = await testRedis();
    const masterKey = crypto.randomBytes(32);
    services = servicesFor(tdb.database, {
      config: testConfig({ ...SWEEP_ENV, DATABASE_URL: tdb.url! }),
      keyring: new Keyring(masterKey),
    });
    const env = {
      ...SWEEP_ENV,
      DATABASE_URL: tdb.url!,
      REDIS_URL: redis.url,
      BULLMQ_PREFIX: prefix,
      RETASC_MASTER_KEY: masterKey.toString("base64"),
    };
    startedAt = Date.now();
    workers = [spawnWorker(env), spawnWorker(env), spawnWorker(env)];
    queue = new Queue(QUEUE_NAME, { prefix, connection: { url: redis.url } });
    await waitFor(async () => (await queue.getWorkersCount()) === 3, 30_000, "three workers connected");
  });
  afterAll(async () => {
    await queue?.close();
    await Promise.all(workers.map((w) => w.kill()));
    await redis?.close();
    await tdb?.close();
  });

  it("records the reclaim of an expired lease and re-ranks a deadline crossing, with no agent call", async () => {
    const s = await arrange(services);
    const timing = await expectSweepsToAct(services, s);
    console.log(`3 BullMQ workers: reclaimed after ${timing.reclaimedAfterMs} ms, re-ranked after ${timing.movedAfterMs} ms`);
  });

  it("runs the reclaim sweep once per tick, not once per worker", async () => {
    // Three ticks more with all three workers up, each of which any of them could have run twice.
    const receipts = async () => (await query<{ n: number }>(services.db, sql`select count(*)::int as n from job_receipts where job = 'sweep.reclaim'`))[0]!.n;
    const from = await receipts();
    await waitFor(async () => (await receipts()) >= from + 3, 30_000, "three more reclaim ticks");
    expect(await queue.getWorkersCount()).toBe(3);
    const stopAt = Date.now();
    const exitCodes = await Promise.all(workers.map((w) => w.terminate()));
    expect(exitCodes, workers.map((w) => w.output()).join("\n")).toEqual([0, 0, 0]);
    const ticks = await query<{ key: string; runs: number }>(
      services.db,
      sql`select key, runs from job_receipts where job = 'sweep.reclaim' order by key`,
    );
    // One receipt per tick, each reached once: three processes never ran (or even received) a tick twice.
    // When ticks fire is the scheduler's business (on a loaded machine they bunch up or slip), so
    // their spacing is not asserted: only that there were several and each ran once.
    expect(ticks.filter((t) => Number(t.runs) !== 1), "each sweep tick runs once, not once per worker").toEqual([]);
    expect(new Set(ticks.map((t) => t.key)).size).toBe(ticks.length);
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    console.log(`3 BullMQ workers: ${ticks.length} reclaim ticks in ${stopAt - startedAt} ms, each run once`);
  });
});
