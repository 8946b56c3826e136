import { sql } from "drizzle-orm";
import PgBoss from "pg-boss";
import { query } from "../db/client.ts";
import type { Ctx } from "../server/context.ts";
import { saveIssue } from "../server/issues/index.ts";
import { nextIssue } from "../server/queue/index.ts";
import { makeAgents, openBenchDatabase, type BenchDatabase } from "./lib/env.ts";
import { seedGraph, type SeedIssue } from "./lib/seed.ts";
import { log, seededRandom } from "./lib/stats.ts";

/**
 * Benchmark 1: claim + fenced finish per second through the service layer (nextIssue, then
 * saveIssue {status: "done", claimToken}), `agents` concurrent agents on one project, each
 * with its own key, spread over two pools standing for two app instances; against pg-boss
 * fetch + complete of the same number of jobs, same concurrency, same PostgreSQL.
 */

export interface ThroughputResult {
  jobs: number;
  agents: number;
  retasc: { perSecond: number; ms: number; claimsPerAgent: { min: number; max: number } };
  /** Mean of a pg-boss run before and one after Retasc's, so drifting machine load does not favour either. */
  pgBoss: { perSecond: number; runs: { perSecond: number; ms: number }[] };
}

const WARMUP_PER_AGENT = 2;
export const QUEUE = "bench-claims";

/** One agent: claim the next issue and finish it with its token until nothing is left (or `limit`). */
export async function retascAgent(ctx: Ctx, limit = Infinity): Promise<number> {
  let finished = 0;
  while (finished < limit) {
    const reply = await nextIssue(ctx, {});
    if (!("claimToken" in reply)) {
      if (reply.ready === 0) return finished;
      continue; // ready work was taken concurrently: ask again
    }
    await saveIssue(ctx, { identifier: reply.identifier, status: "done", claimToken: reply.claimToken });
    finished++;
  }
  return finished;
}

export async function bossAgent(boss: PgBoss, limit = Infinity): Promise<number> {
  let finished = 0;
  while (finished < limit) {
    const [job] = await boss.fetch(QUEUE);
    if (!job) {
      // Under contention a fetch can come back empty while jobs remain (its SKIP LOCKED
      // window was taken concurrently): ask again, as Retasc's agent does on `ready > 0`.
      if ((await boss.getQueueSize(QUEUE)) === 0) return finished;
      continue;
    }
    await boss.complete(QUEUE, job.id);
    finished++;
  }
  return finished;
}

async function runRetasc(bench: BenchDatabase, agents: Ctx[], jobs: number) {
  const random = seededRandom(1);
  const total = jobs + agents.length * WARMUP_PER_AGENT;
  const start = Date.now() - total * 1000;
  const seed: SeedIssue[] = Array.from({ length: total }, (_, i) => ({
    title: `Throughput issue ${i + 1}`,
    priority: Math.floor(random() * 5),
    dueAt: null,
    assigneeId: null,
    createdAt: new Date(start + i * 1000),
  }));
  await seedGraph(bench.pools[0]!, { ...bench.org, authorId: bench.org.agents.alice.userId }, { issues: seed, edges: [] }, new Date());
  await Promise.all(agents.map((ctx) => retascAgent(ctx, WARMUP_PER_AGENT)));
  const t0 = performance.now();
  const counts = await Promise.all(agents.map((ctx) => retascAgent(ctx)));
  const ms = performance.now() - t0;
  const db = bench.pools[0]!.db;
  const [check] = await query<{ done: number; leases: number; issues: number }>(
    db,
    sql`select (select count(*)::int from issues where status = 'done') as done,
               (select count(*)::int from leases) as leases,
               (select count(distinct issue_id)::int from leases) as issues`,
  );
  const finished = counts.reduce((a, b) => a + b, 0);
  if (finished !== jobs || check!.done !== total || check!.leases !== total || check!.issues !== total) {
    throw new Error(`throughput run is inconsistent: finished ${finished}/${jobs}, ${JSON.stringify(check)}`);
  }
  return { perSecond: (jobs / ms) * 1000, ms, claimsPerAgent: { min: Math.min(...counts), max: Math.max(...counts) } };
}

/** pg-boss instances, one per pool of ours, with the same connection count. */
export async function startPgBoss(bench: BenchDatabase, connectionsPerPool: number): Promise<PgBoss[]> {
  const instances: PgBoss[] = [];
  for (let i = 0; i < bench.pools.length; i++) {
    const boss = new PgBoss({ connectionString: bench.url, max: connectionsPerPool, supervise: false, schedule: false });
    boss.on("error", (error) => log(`pg-boss: ${error.message}`));
    await boss.start();
    instances.push(boss);
  }
  await instances[0]!.createQueue(QUEUE);
  return instances;
}

async function completedJobs(bench: BenchDatabase): Promise<number> {
  const [row] = await query<{ completed: number }>(
    bench.pools[0]!.db,
    sql`select count(*)::int as completed from pgboss.job where name = ${QUEUE} and state = 'completed'`,
  );
  return row!.completed;
}

export async function runPgBoss(bench: BenchDatabase, instances: PgBoss[], agentCount: number, jobs: number) {
  const completedBefore = await completedJobs(bench);
  const total = jobs + agentCount * WARMUP_PER_AGENT;
  for (let start = 0; start < total; start += 1000) {
    const count = Math.min(1000, total - start);
    await instances[0]!.insert(Array.from({ length: count }, (_, k) => ({ name: QUEUE, data: { n: start + k } })));
  }
  const workers = Array.from({ length: agentCount }, (_, i) => instances[i % instances.length]!);
  await Promise.all(workers.map((boss) => bossAgent(boss, WARMUP_PER_AGENT)));
  const t0 = performance.now();
  const counts = await Promise.all(workers.map((boss) => bossAgent(boss)));
  const ms = performance.now() - t0;
  const finished = counts.reduce((a, b) => a + b, 0);
  const completed = (await completedJobs(bench)) - completedBefore;
  if (finished !== jobs || completed !== total) {
    throw new Error(`pg-boss run is inconsistent: finished ${finished}/${jobs}, completed ${completed}/${total}`);
  }
  return { perSecond: (jobs / ms) * 1000, ms };
}

export async function claimThroughput(options: { jobs: number; agents: number }): Promise<ThroughputResult> {
  const connectionsPerPool = Math.ceil(options.agents / 2);
  const bench = await openBenchDatabase({ pools: 2, connectionsPerPool, prefix: "THRU" });
  try {
    const agents = await makeAgents(bench, options.agents);
    const instances = await startPgBoss(bench, connectionsPerPool);
    try {
      log(`throughput: pg-boss, ${options.jobs} jobs, ${options.agents} workers`);
      const before = await runPgBoss(bench, instances, options.agents, options.jobs);
      log(`throughput: retasc, ${options.jobs} issues, ${options.agents} agents`);
      const retasc = await runRetasc(bench, agents, options.jobs);
      log(`throughput: pg-boss again`);
      const after = await runPgBoss(bench, instances, options.agents, options.jobs);
      const pgBoss = { perSecond: (before.perSecond + after.perSecond) / 2, runs: [before, after] };
      return { jobs: options.jobs, agents: options.agents, retasc, pgBoss };
    } finally {
      for (const boss of instances) await boss.stop({ graceful: false, wait: true });
    }
  } finally {
    await bench.close();
  }
}
