/**
 * `npm run bench:million` (`-- --orgs 100` for a smaller second size): `nextIssue` p50 / p99 for
 * one org of 1,000 issues while the database around it holds 100,000 issues (100 orgs, 200
 * projects) and then 1,000,000 (1,000 orgs, 2,000 projects), in the same run, so the growth is a
 * ratio. Every org looks like the measured one: 20% of its issues blocked in chains up to 20
 * deep, 10% with a deadline. Dispatch is scoped to the caller's org and project, so the target is
 * a ratio near 1. Not run in CI (seeding a million issues takes minutes); the figures go in
 * bench/README.md.
 *
 * At each size it also measures claim + fenced finish per second with 64 agents over four pools
 * (standing for four app instances; through the service layer, as bench/throughput.ts) on a
 * fresh batch of issues in an org of their own, one tick of the SLA sweep over the whole
 * database, and the Dash queue page's data (`queuePage`, the loader's server call; the page's
 * render over HTTP is bench/dash-queue.ts). What is not here (issue 20): the app's memory after
 * an hour of load, and the full stack over /mcp beside the bare SDK's floor.
 *
 * The measured org is seeded through the app's own code (real ciphertext, exact ranking,
 * bench/lib/seed.ts). The other orgs are filled by generate_series in SQL: their ranking columns
 * follow the same rules (own level from priority; a chain's members blocked by their
 * predecessor) but their titles are placeholders nothing decrypts, they have no people or keys,
 * and their deadlines are far enough off that no SLA threshold falls in the run.
 */
import { sql } from "drizzle-orm";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log, round, distribution, type Distribution } from "./lib/stats.ts";

useBenchPostgres();
const { makeAgents, openBenchDatabase } = await import("./lib/env.ts");
const { fillOrgs, ISSUES_PER_ORG } = await import("./lib/fill.ts");
const { seedLargeGraph, measureNextIssue } = await import("./graph.ts");
const { retascAgent } = await import("./throughput.ts");
const { seedGraph } = await import("./lib/seed.ts");
const { seedOrg } = await import("../server/testing/fixtures.ts");
const { withPrincipal } = await import("../server/with-principal.ts");
const { slaSweep } = await import("../server/queue/sla.ts");
const { queuePage } = await import("../server/dash/queue.ts");
const { timed } = await import("./lib/stats.ts");

const ITERATIONS = 300;
const WARMUP = 30;
/** The fleet: agents over pools ("app instances"), and the issues each size's run drains. */
const FLEET_AGENTS = 64;
const FLEET_POOLS = 4;
const FLEET_ISSUES = 2_000;
const SWEEP_TICKS = 5;
const QUEUE_PAGES = 20;

const args = process.argv.slice(2);
const orgsArg = args.indexOf("--orgs");
const bigOrgs = orgsArg >= 0 ? Number(args[orgsArg + 1]) : 1_000;
if (!Number.isInteger(bigOrgs) || bigOrgs < 100) {
  process.stderr.write("--orgs takes a whole number of at least 100 (the first size is 100 orgs)\n");
  process.exit(2);
}

const bench = await openBenchDatabase({ pools: FLEET_POOLS, connectionsPerPool: FLEET_AGENTS / FLEET_POOLS, prefix: "MIL" });
const db = bench.pools[0]!.db;

const issueCount = async () => Number(((await db.execute(sql`select count(*)::int as n from issues`)) as unknown as { n: number }[])[0]!.n);

interface Phase {
  issues: number;
  orgs: number;
  fillSeconds: number;
  nextIssue: Distribution;
  fleetPerSecond: number;
  sweep: Distribution;
  queuePage: Distribution;
}

log(`million: seeding the measured org (${ISSUES_PER_ORG} issues) through the app's code`);
const [agent] = await makeAgents(bench, 1);
const { expectedFirst } = await seedLargeGraph(bench, agent!, ISSUES_PER_ORG);

/**
 * Claim + fenced finish per second: FLEET_ISSUES fresh issues drained by the fleet, in an org of
 * its own (a new one at each size), so the drain leaves the measured org's graph alone.
 */
async function fleetRate(): Promise<number> {
  const fleetOrg = await seedOrg(bench.pools[0]!, { prefix: "FLT", name: "Fleet" });
  const fleet = await Promise.all(
    Array.from({ length: FLEET_AGENTS }, async (_, i) => {
      const { principal } = await fleetOrg.agentFor((["alice", "bob", "carol"] as const)[i % 3]!, `fleet-${i}`);
      return withPrincipal(bench.pools[i % FLEET_POOLS]!, principal);
    }),
  );
  const now = Date.now();
  const issues = Array.from({ length: FLEET_ISSUES }, (_, i) => ({
    title: `Fleet issue ${i + 1}`,
    priority: i % 5,
    dueAt: null,
    assigneeId: null,
    createdAt: new Date(now - (FLEET_ISSUES - i) * 1000),
  }));
  await seedGraph(bench.pools[0]!, { ...fleetOrg, authorId: fleetOrg.agents.alice.userId }, { issues, edges: [] }, new Date());
  const t0 = performance.now();
  const finished = (await Promise.all(fleet.map((ctx) => retascAgent(ctx)))).reduce((a, b) => a + b, 0);
  const ms = performance.now() - t0;
  if (finished !== FLEET_ISSUES) throw new Error(`the fleet finished ${finished} of ${FLEET_ISSUES} issues`);
  return (finished / ms) * 1000;
}

async function repeatTimed(times: number, warmup: number, fn: () => Promise<unknown>): Promise<Distribution> {
  const samples: number[] = [];
  for (let i = 0; i < warmup + times; i++) {
    const { ms } = await timed(fn);
    if (i >= warmup) samples.push(ms);
  }
  return distribution(samples);
}

async function phase(orgsBefore: number, orgsAfter: number): Promise<Phase> {
  const started = Date.now();
  await fillOrgs(db, orgsBefore, orgsAfter);
  const fillSeconds = (Date.now() - started) / 1000;
  const issues = await issueCount();
  log(`million: ${issues} issues in ${orgsAfter} orgs (filled in ${round(fillSeconds, 1)} s); timing nextIssue`);
  const samples = await measureNextIssue(agent!, ITERATIONS, WARMUP, phaseFirst);
  log(`million: the fleet (${FLEET_AGENTS} agents over ${FLEET_POOLS} pools) drains ${FLEET_ISSUES} issues`);
  const fleetPerSecond = await fleetRate();
  log("million: SLA sweep ticks and the Dash queue page");
  const sweep = await repeatTimed(SWEEP_TICKS, 1, () => slaSweep(bench.pools[0]!));
  const queue = await repeatTimed(QUEUE_PAGES, 3, () => queuePage(agent!, {}));
  return { issues, orgs: orgsAfter, fillSeconds, nextIssue: distribution(samples), fleetPerSecond, sweep, queuePage: queue };
}

// The measured org is org 1 of each size; the filler orgs are numbered from 1.
let phaseFirst: string | null = expectedFirst;
const small = await phase(1, 100);
phaseFirst = null; // the first phase worked off the top of the order
const large = await phase(100, bigOrgs);
await bench.close();

const ratio = (a: number, b: number) => round(a / b, 2);
process.stdout.write(
  [
    "",
    `| figure | ${small.issues.toLocaleString("en")} issues, ${small.orgs} orgs | ${large.issues.toLocaleString("en")} issues, ${large.orgs} orgs | ratio | target |`,
    "|---|---|---|---|---|",
    `| \`nextIssue\` p50 | ${round(small.nextIssue.p50, 2)} ms | ${round(large.nextIssue.p50, 2)} ms | ${ratio(large.nextIssue.p50, small.nextIssue.p50)}x | < 5 ms at the large size: ${large.nextIssue.p50 < 5 ? "PASS" : "FAIL"} |`,
    `| \`nextIssue\` p99 | ${round(small.nextIssue.p99, 2)} ms | ${round(large.nextIssue.p99, 2)} ms | ${ratio(large.nextIssue.p99, small.nextIssue.p99)}x | < 25 ms at the large size: ${large.nextIssue.p99 < 25 ? "PASS" : "FAIL"} |`,
    `| claim + fenced finish, ${FLEET_AGENTS} agents over ${FLEET_POOLS} pools | ${round(small.fleetPerSecond, 0)} /s | ${round(large.fleetPerSecond, 0)} /s | ${ratio(large.fleetPerSecond, small.fleetPerSecond)}x | within 10% (>= 0.9x): ${large.fleetPerSecond >= 0.9 * small.fleetPerSecond ? "PASS" : "FAIL"} |`,
    `| SLA sweep tick p50 (whole database) | ${round(small.sweep.p50, 2)} ms | ${round(large.sweep.p50, 2)} ms | ${ratio(large.sweep.p50, small.sweep.p50)}x | proportional to changed issues, not all: near 1x |`,
    `| Dash queue page data p50 (\`queuePage\`) | ${round(small.queuePage.p50, 2)} ms | ${round(large.queuePage.p50, 2)} ms | ${ratio(large.queuePage.p50, small.queuePage.p50)}x | < 200 ms: ${large.queuePage.p50 < 200 ? "PASS" : "FAIL"} |`,
    `| fill time (SQL) | ${round(small.fillSeconds, 1)} s | ${round(large.fillSeconds, 1)} s | | |`,
    "",
  ].join("\n"),
);
