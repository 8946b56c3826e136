/**
 * PostgreSQL's CPU per claim + finish in one backend, with batches of a fixed size (issue 30,
 * decision 121): the statements the doors send (`retasc_next_issues`, then `retasc_finishes` with
 * the claims' tokens), built as server/queue/next.ts and server/issues/finish.ts build them and
 * sent as server/issues/hot-batch.ts sends them (hotBatchStatement), from one connection, one
 * batch at a time. The backend's CPU is read from /proc around the measured
 * rounds. Unlike `claim-cpu.ts`, nothing here depends on how calls happen to gather into batches,
 * so the figure moves only with the machine's speed (about 10% between runs on this 2-core one):
 * compare two commits over several alternated runs.
 * Beside it, in the same backend, the baseline: a one-row UPDATE by primary key, one transaction
 * each, as many times as there were claim + finish cycles, in ten slices alternated with the
 * claims' so that a change in the machine's speed meets both.
 *
 * `npx tsx bench/claim-loop.ts [--batch 14] [--cycles 2100] [--billing]`: `--batch 14` is the
 * service layer's batch in `claim-cpu.ts` (32 agents over two pools), `--batch 1` a lone call's,
 * as over `/mcp`; `--billing` charges each claim and finish (billing on, credit enough for all);
 * `--together` sends each batch's claims with the previous batch's finishes in one statement, as
 * server/issues/hot-batch.ts does when both wait on a pool (decision 124). About 10 s.
 */
import fs from "node:fs";
import { sql } from "drizzle-orm";
import { wholeNumberOption } from "./lib/args.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";

useBenchPostgres();
const { makeAgents, openBenchDatabase } = await import("./lib/env.ts");
const { seedClaimQueue } = await import("./lib/seed.ts");
const { query } = await import("../db/client.ts");
const { cpuSecondsByPid } = await import("./lib/cpu.ts");
const { nextIssueCall } = await import("../server/queue/next.ts");
const { finishCall } = await import("../server/issues/finish.ts");
const { hotBatchStatement } = await import("../server/issues/hot-batch.ts");
const { randomToken } = await import("../server/crypto/index.ts");
const { log } = await import("./lib/stats.ts");
const { billingOnConfig } = await import("../server/usage/testing.ts");
const { withPrincipal } = await import("../server/with-principal.ts");

const BATCH = wholeNumberOption("batch", 14);
const CYCLES = wholeNumberOption("cycles", 2_100, { least: BATCH });
const WARMUP_ROUNDS = 20;
const BILLING = process.argv.includes("--billing");
const TOGETHER = process.argv.includes("--together");
const rounds = Math.ceil(CYCLES / BATCH);

const bench = await openBenchDatabase({ pools: 1, connectionsPerPool: 1, prefix: "LOOP" });
try {
  const billingOn = billingOnConfig();
  const agents = (await makeAgents(bench, BATCH)).map((ctx) => (BILLING ? withPrincipal({ ...ctx, config: billingOn }, ctx.principal) : ctx));
  const total = (rounds + WARMUP_ROUNDS) * BATCH;
  await seedClaimQueue(bench, total);
  const db = bench.pools[0]!.db;
  if (BILLING) await db.execute(sql`select retasc_add_credit(${bench.org.orgId}::text, 'given', ${1_000_000_000_000}::bigint, 'bench', 'bench', null, now())`);
  const [{ pid }] = (await query<{ pid: number }>(db, sql`select pg_backend_pid() as pid`)) as [{ pid: number }];
  log(`the backend is pid ${pid} (perf record -p ${pid} profiles it alone)`);
  const backendSeconds = () => cpuSecondsByPid((p) => (p === pid ? "backend" : null)).get(pid)?.seconds ?? NaN;

  const claimsOf = (now: Date, tokens: string[]) => agents.map((ctx, n) => nextIssueCall(ctx, now, tokens[n]!, { allLanes: false, checkSla: true }));
  type Claimed = { index: number; outcome: string; issue: { identifier: string } };
  const finishesOf = (claimed: Claimed[], tokens: string[]) =>
    claimed.map((result) => {
      if (result.outcome !== "claimed") throw new Error(`a claim came back ${result.outcome}`);
      return finishCall(agents[result.index]!, result.issue.identifier, tokens[result.index]!, new Date());
    });
  /** One statement as a pool sends it (server/issues/hot-batch.ts): the finishes, then the claims; their claims' results. */
  const send = async (finishes: ReturnType<typeof finishesOf>, claims: ReturnType<typeof claimsOf>) => {
    const [row] = await query<{ retasc_finishes?: { outcome: string }[]; retasc_next_issues?: Claimed[] }>(
      db,
      hotBatchStatement({ retasc_finishes: finishes, retasc_next_issues: claims }),
    );
    for (const result of row!.retasc_finishes ?? []) if (result.outcome !== "finished") throw new Error(`a finish came back ${result.outcome}`);
    return row!.retasc_next_issues ?? [];
  };

  /** One round: every agent's claim in one statement, then every finish in one. */
  const apart = async () => {
    const tokens = agents.map(() => randomToken("rtclm_", 24));
    const claimed = await send([], claimsOf(new Date(), tokens));
    await send(finishesOf(claimed, tokens), []);
  };
  /** `--together`: the previous round's finishes and this round's claims in one statement. */
  let unfinished: ReturnType<typeof finishesOf> = [];
  const together = async () => {
    const tokens = agents.map(() => randomToken("rtclm_", 24));
    unfinished = finishesOf(await send(unfinished, claimsOf(new Date(), tokens)), tokens);
  };
  const round = TOGETHER ? together : apart;
  /** The last `--together` round's finishes, in a statement of their own. */
  const finishLeftover = async () => {
    if (unfinished.length > 0) await send(unfinished, []);
    unfinished = [];
  };

  await db.execute(sql`create table bench_row (id integer primary key, n integer not null, filler text not null)`);
  await db.execute(sql`insert into bench_row select g, 0, repeat('x', 90) from generate_series(1, 1000) g`);
  let updates = 0;
  const update = () => db.execute(sql`update bench_row set n = n + 1 where id = ${(updates++ % 1000) + 1}`);
  for (let r = 0; r < WARMUP_ROUNDS; r++) await round();
  for (let k = 0; k < 100; k++) await update();

  // Claims and the baseline alternate in ten slices, so that both see the machine alike.
  const SLICES = 10;
  let claimSeconds = 0;
  let updateSeconds = 0;
  const cycles = rounds * BATCH;
  // Slice `slice`'s share of `total`, whole: the slices add up to exactly `total`.
  const share = (total: number, slice: number) => Math.floor(((slice + 1) * total) / SLICES) - Math.floor((slice * total) / SLICES);
  for (let slice = 0; slice < SLICES; slice++) {
    let before = backendSeconds();
    for (let r = 0; r < share(rounds, slice); r++) await round();
    if (slice === SLICES - 1) await finishLeftover();
    claimSeconds += backendSeconds() - before;
    before = backendSeconds();
    for (let k = 0; k < share(cycles, slice); k++) await update();
    updateSeconds += backendSeconds() - before;
  }
  const claimMs = (claimSeconds * 1000) / cycles;
  const updateMs = (updateSeconds * 1000) / cycles;

  const shape = TOGETHER ? ", each statement with the previous batch's finishes" : "";
  log(`PostgreSQL CPU per claim + finish${BILLING ? " (billing on)" : ""}, one backend, batches of ${BATCH}${shape}, ${cycles} cycles: ${claimMs.toFixed(3)} ms`);
  log(`baseline, a one-row UPDATE by primary key in the same backend: ${updateMs.toFixed(3)} ms (claim + finish ${(claimMs / updateMs).toFixed(2)}x)`);
  log(`load average ${fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
} finally {
  await bench.close();
}
process.exit(0);
