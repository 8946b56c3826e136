import { and, eq, inArray, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import { query } from "../db/client.ts";
import { compareDispatch, dispatchable, dispatchOrder, inLanes } from "../db/schema/dispatch.ts";
import { issues } from "../db/schema/index.ts";
import type { Ctx } from "../server/context.ts";
import { saveIssue } from "../server/issues/index.ts";
import { nextIssue } from "../server/queue/index.ts";
import { lockOrgGraph, rerank } from "../server/issues/ranking.ts";
import { ownLevelOf, slaOf } from "../server/issues/levels.ts";
import { makeAgents, openBenchDatabase, type BenchDatabase } from "./lib/env.ts";
import { seedGraph, type SeededIssue, type SeedIssue } from "./lib/seed.ts";
import { distribution, log, seededRandom, timed, type Distribution } from "./lib/stats.ts";

/**
 * Benchmarks 2 and 3 on one large graph: `nextIssue` latency with `size` open issues (20%
 * blocked, chains up to 20 deep), and the re-rank after one priority change at the bottom of
 * a 20-deep chain.
 */

export interface GraphResult {
  issues: number;
  blocked: number;
  chains: number;
  deepestChain: number;
  seedMs: number;
  nextIssue: Distribution;
  primaryKeySelect: Distribution;
  /** A one-row update committed on its own: the floor of any claim, which must commit durably. */
  durableWrite: Distribution;
  rerankCall: Distribution;
  rerankPart: Distribution;
  standaloneCall: Distribution;
  standaloneRerankPart: Distribution;
  explain?: string;
}

const DEPTH = 20;
const BLOCKED_SHARE = 0.2;
/** Chains kept all-low so a priority change at their bottom re-ranks every ancestor. */
const PROBE_CHAINS = 4;
const DAY = 86_400_000;

interface Plan {
  seed: SeedIssue[];
  edges: [number, number][];
  chains: number[][];
  probeChains: number[][];
}

/** Issues numbered by age; chains of 2..20 (some exactly 20) until 20% are blocked; the rest standalone. */
function planGraph(size: number, people: { bob: string; carol: string }, now: number): Plan {
  const random = seededRandom(42);
  const lengths: number[] = [];
  let blocked = 0;
  const target = Math.round(size * BLOCKED_SHARE);
  while (blocked < target) {
    let length = lengths.length < PROBE_CHAINS * 3 ? DEPTH : 2 + Math.floor(random() * (DEPTH - 1));
    length = Math.min(length, target - blocked + 1);
    lengths.push(length);
    blocked += length - 1;
  }
  // Spread chain members over the numbering: a chain's root is its oldest issue.
  const order = Array.from({ length: size }, (_, i) => i);
  for (let i = size - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  let cursor = 0;
  const chains = lengths.map((length) => order.slice(cursor, (cursor += length)).sort((a, b) => a - b));
  const edges: [number, number][] = chains.flatMap((chain) => chain.slice(1).map((t, k): [number, number] => [chain[k]!, t]));
  const probeChains = chains.slice(0, PROBE_CHAINS);
  const probe = new Set(probeChains.flat());
  const span = 10 * DAY;
  const seed: SeedIssue[] = Array.from({ length: size }, (_, i) => {
    const createdAt = new Date(now - span + Math.floor((i * span) / size));
    if (probe.has(i)) return { title: `Probe chain issue ${i + 1}`, priority: 4, dueAt: null, assigneeId: null, createdAt };
    const r = random();
    const priority = r < 0.1 ? 0 : r < 0.15 ? 1 : r < 0.35 ? 2 : r < 0.7 ? 3 : 4;
    const d = random();
    // 10% carry a deadline: most weeks away, some close, a few already past.
    const dueAt = d < 0.1 ? new Date(now + (d < 0.005 ? -DAY : d < 0.02 ? DAY : 7 * DAY + random() * 21 * DAY)) : null;
    const a = random();
    const assigneeId = a < 0.1 ? people.bob : a < 0.2 ? people.carol : null;
    return { title: `Graph issue ${i + 1}: ${random().toString(36).slice(2, 14)}`, priority, dueAt, assigneeId, createdAt };
  });
  return { seed, edges, chains, probeChains };
}

/** Re-ranks a sample with the engine (inside a rolled-back transaction): a correct seed leaves nothing to change. */
async function verifySample(bench: BenchDatabase, seeded: SeededIssue[], plan: Plan): Promise<void> {
  const random = seededRandom(7);
  const sample = new Set<string>();
  for (const chain of plan.chains.slice(0, 50)) sample.add(seeded[chain.at(-1)!]!.id);
  while (sample.size < 500) sample.add(seeded[Math.floor(random() * seeded.length)]!.id);
  const rollback = new Error("rollback");
  let changed = -1;
  await bench.pools[0]!.db
    .transaction(async (tx) => {
      changed = await rerank(tx, [...sample]);
      throw rollback;
    })
    .catch((error) => {
      if (error !== rollback) throw error;
    });
  if (changed !== 0) throw new Error(`seeded ranking disagrees with the engine's rerank on ${changed} issue(s)`);
}

/**
 * Seeds the bench org with `size` issues (20% blocked in chains up to 20 deep, 10% with a
 * deadline), checks a sample against the engine, and says which issue `ctx` must be handed first.
 */
export async function seedLargeGraph(bench: BenchDatabase, ctx: Ctx, size: number) {
  const now = Date.now();
  const plan = planGraph(size, { bob: bench.org.agents.bob.userId, carol: bench.org.agents.carol.userId }, now);
  log(`graph: seeding ${size} issues, ${plan.edges.length} edges, ${plan.chains.length} chains`);
  const seeding = await timed(() =>
    seedGraph(bench.pools[0]!, { ...bench.org, authorId: bench.org.agents.alice.userId }, { issues: plan.seed, edges: plan.edges }, new Date(now)),
  );
  const seeded = seeding.value;
  await verifySample(bench, seeded, plan);
  const me = ctx.principal.userId;
  const visible = seeded.filter((s) => s.openBlockerCount === 0 && (s.assigneeId === null || s.assigneeId === me));
  const expectedFirst = visible.reduce((best, s) => (compareDispatch(s, best) < 0 ? s : best)).identifier;
  return { plan, seeded, seedMs: seeding.ms, expectedFirst };
}

/** `nextIssue` timed `iterations` times after `warmup`, each claim finished untimed; the first must be `expectedFirst` when given. */
export async function measureNextIssue(ctx: Ctx, iterations: number, warmup: number, expectedFirst: string | null): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < warmup + iterations; i++) {
    const { value: reply, ms } = await timed(() => nextIssue(ctx, {}));
    if (!("claimToken" in reply)) throw new Error("nextIssue found nothing to claim in the graph");
    if (i === 0 && expectedFirst !== null && reply.identifier !== expectedFirst) {
      throw new Error(`nextIssue handed out ${reply.identifier}; the seeded order puts ${expectedFirst} first`);
    }
    if (i >= warmup) samples.push(ms);
    // Finish it, so the graph stays at its size minus what this phase worked off.
    await saveIssue(ctx, { identifier: reply.identifier, status: "done", claimToken: reply.claimToken });
  }
  return samples;
}

async function measurePrimaryKey(bench: BenchDatabase, seeded: SeededIssue[], iterations: number, write: boolean): Promise<number[]> {
  const random = seededRandom(11);
  const db = bench.pools[0]!.db;
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const id = seeded[Math.floor(random() * seeded.length)]!.id;
    const statement = write
      ? () => db.update(issues).set({ updatedAt: sql`${issues.updatedAt}` }).where(eq(issues.id, id))
      : () => db.select().from(issues).where(eq(issues.id, id));
    samples.push((await timed(statement)).ms);
  }
  return samples;
}

/** saveIssue {priority}, alternating urgent and low, on each issue in turn; returns the call times. */
async function measurePriorityCalls(ctx: Ctx, identifiers: string[], iterations: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const identifier = identifiers[i % identifiers.length]!;
    const priority = Math.floor(i / identifiers.length) % 2 === 0 ? 1 : 4;
    samples.push((await timed(() => saveIssue(ctx, { identifier, priority }))).ms);
  }
  return samples;
}

/** The re-rank alone, as saveIssue runs it: graph lock and own level written, then `rerank` timed. */
async function measureRerankPart(bench: BenchDatabase, id: string, iterations: number, expectChanged: number): Promise<number[]> {
  const samples: number[] = [];
  const now = new Date();
  for (let i = 0; i < iterations; i++) {
    await bench.pools[0]!.db.transaction(async (tx) => {
      await lockOrgGraph(tx, bench.org.orgId);
      const [row] = await tx.select().from(issues).where(eq(issues.id, id)).for("update");
      const priority = row!.priority === 1 ? 4 : 1;
      const ownLevel = ownLevelOf(priority, slaOf(row!.dueAt, row!.dueSetAt ?? row!.createdAt, now));
      await tx.update(issues).set({ priority, ownLevel }).where(eq(issues.id, id));
      const { value: changed, ms } = await timed(() => rerank(tx, [id]));
      if (changed !== expectChanged) throw new Error(`a priority change re-ranked ${changed} issue(s), expected ${expectChanged}`);
      samples.push(ms);
    });
  }
  return samples;
}

/**
 * The plan of retasc_next_issue's pick for a project key, as the function plans it (a generic
 * plan, no sequential scans): the pick built from the dispatch rule with the function's
 * parameters as $1..$4 (server/queue/dispatch-sql.test.ts holds the function to the same rule).
 */
async function explainDispatch(bench: BenchDatabase, ctx: Ctx): Promise<string> {
  const { projectId, userId } = ctx.principal;
  const i = alias(issues, "i");
  return bench.pools[0]!.db.transaction(async (tx) => {
    await tx.execute(sql`set local plan_cache_mode = force_generic_plan`);
    await tx.execute(sql`set local enable_seqscan = off`);
    await tx.execute(sql`prepare retasc_pick(text, timestamptz, text, boolean) as
      select i.id from issues i
       where i.project_id = $1 and ${dispatchable(i, sql.raw("$2"))} and ${inLanes(i, sql.raw("$3"), sql.raw("$4"))}
       order by ${sql.join(dispatchOrder(i), sql`, `)}
       limit 1 for update skip locked`);
    const rows = await query<{ "QUERY PLAN": string }>(
      tx,
      sql.raw(`explain (analyze, buffers) execute retasc_pick('${projectId}', now(), '${userId}', false)`),
    );
    await tx.execute(sql`deallocate retasc_pick`);
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  });
}

export async function graphBenchmarks(options: {
  size: number;
  latencyIterations: number;
  rerankIterations: number;
  explain: boolean;
}): Promise<GraphResult> {
  const bench = await openBenchDatabase({ pools: 1, connectionsPerPool: 4, prefix: "GRAPH" });
  try {
    const [agent] = await makeAgents(bench, 1);
    const ctx = agent!;
    const { plan, seeded, seedMs, expectedFirst } = await seedLargeGraph(bench, ctx, options.size);
    log(`graph: seeded in ${Math.round(seedMs)} ms; nextIssue x${options.latencyIterations}`);
    const explain = options.explain ? await explainDispatch(bench, ctx) : undefined;
    const latency = await measureNextIssue(ctx, options.latencyIterations, Math.min(50, options.latencyIterations), expectedFirst);
    const primaryKey = await measurePrimaryKey(bench, seeded, options.latencyIterations, false);
    const durableWrite = await measurePrimaryKey(bench, seeded, Math.min(300, options.latencyIterations), true);

    // Probe chains untouched by the latency phase: every member still todo and unheld.
    const probeBottoms: SeededIssue[] = [];
    for (const chain of plan.probeChains) {
      const ids = chain.map((i) => seeded[i]!.id);
      const open = await bench.pools[0]!.db
        .select({ n: sql<number>`count(*)::int` })
        .from(issues)
        .where(and(inArray(issues.id, ids), eq(issues.status, "todo"), sql`${issues.leaseId} is null`));
      if (Number(open[0]!.n) === chain.length) probeBottoms.push(seeded[chain.at(-1)!]!);
    }
    if (probeBottoms.length === 0) throw new Error("no untouched 20-deep chain left to probe");
    const sources = new Set(plan.edges.map(([source]) => source));
    const candidates = seeded
      .filter((s, i) => s.openBlockerCount === 0 && !sources.has(i) && plan.seed[i]!.priority === 4 && plan.seed[i]!.dueAt === null)
      .slice(-50);
    const untouched = await bench.pools[0]!.db
      .select({ id: issues.id })
      .from(issues)
      .where(and(inArray(issues.id, candidates.map((c) => c.id)), eq(issues.status, "todo"), sql`${issues.leaseId} is null`));
    const standalone = candidates.filter((c) => untouched.some((u) => u.id === c.id)).slice(0, probeBottoms.length);
    log(`graph: priority changes at the bottom of ${probeBottoms.length} ${DEPTH}-deep chain(s) x${options.rerankIterations}`);
    const rerankCall = await measurePriorityCalls(ctx, probeBottoms.map((s) => s.identifier), options.rerankIterations);
    const standaloneCall = await measurePriorityCalls(ctx, standalone.map((s) => s.identifier), options.rerankIterations);
    const rerankPart = await measureRerankPart(bench, probeBottoms[0]!.id, options.rerankIterations, DEPTH);
    const standaloneRerankPart = await measureRerankPart(bench, standalone[0]!.id, options.rerankIterations, 1);
    return {
      issues: options.size,
      blocked: plan.edges.length,
      chains: plan.chains.length,
      deepestChain: Math.max(...plan.chains.map((c) => c.length)),
      seedMs,
      nextIssue: distribution(latency),
      primaryKeySelect: distribution(primaryKey),
      durableWrite: distribution(durableWrite),
      rerankCall: distribution(rerankCall),
      rerankPart: distribution(rerankPart),
      standaloneCall: distribution(standaloneCall),
      standaloneRerankPart: distribution(standaloneRerankPart),
      explain,
    };
  } finally {
    await bench.close();
  }
}
