/**
 * `npm run bench:scrape` (`-- --orgs 100` for 100,000 issues): what a `/metrics` scrape costs at
 * a million issues (1,000 filler orgs of 1,000, bench/lib/fill.ts), before and after decision
 * 077, in the same run:
 * - before: the count the gauge ran at every scrape until then (`select status, count(*) from
 *   issues group by status`), the baseline;
 * - after: `readIssueCounts` (the kept counts plus the changes not yet folded) with nothing to
 *   fold, with 1,000 and with 10,000 changes waiting (10 s of 100 or 1,000 status changes a
 *   second: the fold sweep runs every 10 s); the whole exposition (`renderMetrics`, every gauge read from the
 *   database) beside it; and the fold of those 10,000 changes;
 * - the write path, with the status-change trigger (which keeps the counts, and the duplicate
 *   gate's terms and intake's write-back beside them, decision 121) on and off, alternated, so
 *   its cost is a ratio:
 *   bare single-row status changes from 8 connections, and claim + finish through the service
 *   layer with 8 agents (bench/throughput.ts's agent).
 * At the end the kept counts are checked against a count from scratch. Not run in CI (the fill
 * takes minutes); figures in bench/README.md.
 */
import { sql } from "drizzle-orm";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { distribution, log, round, timed, type Distribution } from "./lib/stats.ts";

useBenchPostgres();
const { makeAgents, openBenchDatabase } = await import("./lib/env.ts");
const { retascAgent } = await import("./throughput.ts");
const { saveIssue } = await import("../server/issues/index.ts");
const { fillOrgs } = await import("./lib/fill.ts");
const { query } = await import("../db/client.ts");
const { foldIssueCounts, readIssueCounts } = await import("../server/metrics/issue-counts.ts");
const { registerDatabaseGauges, renderMetrics } = await import("../server/metrics/index.ts");

const args = process.argv.slice(2);
const orgsArg = args.indexOf("--orgs");
const orgs = orgsArg >= 0 ? Number(args[orgsArg + 1]) : 1_000;
const READS = 50;
const PENDING = 10_000;
const WRITES_PER_ROUND = 1_000;
const CLAIMS_PER_ROUND = 300;
/** Alternated on, off, on, ...: the load of a shared machine moves between rounds. */
const CLAIM_ROUNDS = 8;
const WRITERS = 8;

const bench = await openBenchDatabase({ pools: 1, connectionsPerPool: WRITERS, prefix: "SCR" });
const services = bench.pools[0]!;
const db = services.db;
const report: Record<string, unknown> = { orgs };
try {
  log(`filling ${orgs} orgs of 1,000 issues`);
  const fill = await timed(() => fillOrgs(db, 0, orgs));
  await foldIssueCounts(services);
  await db.execute(sql`vacuum analyze issues`);
  const [{ n: issues } = { n: 0 }] = await query<{ n: number }>(db, sql`select count(*)::int as n from issues`);
  report.issues = issues;
  report.fillSeconds = round(fill.ms / 1000, 1);

  const reads = async (fn: () => Promise<unknown>): Promise<Distribution> => {
    for (let i = 0; i < 3; i++) await fn();
    const samples: number[] = [];
    for (let i = 0; i < READS; i++) samples.push((await timed(fn)).ms);
    const d = distribution(samples);
    return { n: d.n, p50: round(d.p50), p99: round(d.p99), max: round(d.max) };
  };
  const before = await reads(() => db.execute(sql`select status, count(*)::int as n from issues group by status`));
  const afterFolded = await reads(() => readIssueCounts(db));
  // Real status changes, appended by the trigger and left unfolded: 1,000, then 10,000.
  const change = (n: number) => db.execute(sql`update issues set status = 'doing' where id in (select id from issues where status = 'todo' limit ${n})`);
  await change(PENDING / 10);
  const afterPending1000 = await reads(() => readIssueCounts(db));
  await change(PENDING - PENDING / 10);
  const afterPending = await reads(() => readIssueCounts(db));
  registerDatabaseGauges(bench.tdb.database);
  const scrapes: number[] = [];
  for (let i = 0; i < 10; i++) {
    // The gauges' database read is reused for 2 s: wait it out so each scrape reads.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    scrapes.push((await timed(() => renderMetrics())).ms);
  }
  const scrape = distribution(scrapes);
  const foldMs = (await timed(() => foldIssueCounts(services))).ms;
  report.scrape = {
    before_countEveryIssue: before,
    after_nothingToFold: afterFolded,
    after_1000Waiting: afterPending1000,
    after_10000Waiting: afterPending,
    after_wholeExposition_10000Waiting: { n: scrape.n, p50: round(scrape.p50), p99: round(scrape.p99) },
    foldOf10000Ms: round(foldMs),
    ratioP50: round(afterPending.p50 / before.p50, 4),
  };

  // The write path: status changes with the status-change trigger on and off, alternated.
  const ids = (await query<{ id: string }>(db, sql`select id from issues where status = 'todo' limit ${WRITES_PER_ROUND * 4}`)).map((r) => r.id);
  const round4 = async (slice: string[]) => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (next < slice.length) {
          const id = slice[next++]!;
          await db.execute(sql`update issues set status = 'doing' where id = ${id}`);
        }
      }),
    );
    return slice.length / ((performance.now() - started) / 1000);
  };
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const rates: { on: number[]; off: number[] } = { on: [], off: [] };
  for (let r = 0; r < 4; r++) {
    const on = r % 2 === 0;
    await db.execute(on ? sql`alter table issues enable trigger issues_status_changed` : sql`alter table issues disable trigger issues_status_changed`);
    rates[on ? "on" : "off"].push(await round4(ids.slice(r * WRITES_PER_ROUND, (r + 1) * WRITES_PER_ROUND)));
  }
  await db.execute(sql`alter table issues enable trigger issues_status_changed`);
  report.statusChangesPerSecond = { triggerOn: round(mean(rates.on)), triggerOff: round(mean(rates.off)), ratio: round(mean(rates.on) / mean(rates.off), 3) };

  // Claim + finish through the service layer, 8 agents, trigger on and off alternated.
  const agents = await makeAgents(bench, WRITERS);
  const claimRates: { on: number[]; off: number[] } = { on: [], off: [] };
  for (let r = 0; r < CLAIM_ROUNDS; r++) {
    const on = r % 2 === 0;
    for (let i = 0; i < CLAIMS_PER_ROUND; i++) {
      await saveIssue(agents[i % WRITERS]!, { title: `scrape ${r}-${i}`, work: true, changeType: "feat", noDependency: "bench" });
    }
    await db.execute(on ? sql`alter table issues enable trigger issues_status_changed` : sql`alter table issues disable trigger issues_status_changed`);
    const started = performance.now();
    const done = (await Promise.all(agents.map((ctx) => retascAgent(ctx)))).reduce((a, b) => a + b, 0);
    claimRates[on ? "on" : "off"].push(done / ((performance.now() - started) / 1000));
  }
  await db.execute(sql`alter table issues enable trigger issues_status_changed`);
  report.claimPlusFinishPerSecond = { triggerOn: round(mean(claimRates.on)), triggerOff: round(mean(claimRates.off)), ratio: round(mean(claimRates.on) / mean(claimRates.off), 3) };

  // The rounds with the trigger off left the counts behind on purpose: recount, then check.
  await db.execute(sql`select retasc_issue_counts_reset()`);
  await db.execute(sql`update issues set status = 'review' where id in (select id from issues where status = 'doing' limit 100)`);
  await foldIssueCounts(services);
  const kept = new Map(await readIssueCounts(db));
  const counted = await query<{ status: string; n: number }>(db, sql`select status, count(*)::int as n from issues group by status`);
  report.exactAtTheEnd = counted.every((r) => kept.get(r.status) === Number(r.n)) && kept.size === counted.length;
  process.stdout.write(JSON.stringify(report, null, 2) + "\n");
} finally {
  await bench.close();
}
process.exit(0);
