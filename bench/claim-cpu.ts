/**
 * CPU per claim + fenced finish (issue 30, decisions 104 and 111): the service-layer half of
 * `throughput.ts` (32 agents over two pools, 2,000 issues after a warm-up of 5 a agent, one
 * project), with the CPU seconds PostgreSQL's backends for this run's database and this process
 * used while it ran, per claim + finish, from /proc (Linux); beside the same for pg-boss's fetch +
 * complete of 2,000 jobs on the same pools' sizes and database, run before and after ours (mean).
 * On a machine whose CPUs Node and PostgreSQL share, throughput is about the CPUs over the sum of
 * the two per cycle; CPU time moves far less with the machine's load than throughput does, so two
 * commits compare on it when the machine is shared.
 *
 * `--indexes` also prints how often each index of the hot tables was read, and how many entries.
 * `--profile FILE` writes a V8 CPU profile of this process over Retasc's measured phase
 * (`.cpuprofile`, for Chrome's DevTools) and prints its self time by layer (bench/lib/profile.ts);
 * the profiler's own cost makes that run's Node figure higher. About 30 s.
 *
 * `npx tsx bench/claim-cpu.ts [--agents 32] [--indexes] [--profile FILE]`
 */
import fs from "node:fs";
import { Session } from "node:inspector/promises";
import { sql } from "drizzle-orm";
import { useBenchPostgres } from "./lib/postgres-env.ts";

useBenchPostgres();
const { makeAgents, openBenchDatabase } = await import("./lib/env.ts");
const { seedClaimQueue } = await import("./lib/seed.ts");
const { bossAgent, QUEUE, retascAgent, runPgBoss, startPgBoss } = await import("./throughput.ts");
const { query } = await import("../db/client.ts");
const { cpuSecondsByPid, cpuMsPerByPid } = await import("./lib/cpu.ts");
const { profileByLayer } = await import("./lib/profile.ts");
const { log } = await import("./lib/stats.ts");

const agentsIndex = process.argv.indexOf("--agents");
const AGENTS = agentsIndex > 0 ? Number(process.argv[agentsIndex + 1]) : 32;
const JOBS = 2_000;
const WARMUP = 5;
const profileIndex = process.argv.indexOf("--profile");
const profileFile = profileIndex > 0 ? process.argv[profileIndex + 1] : undefined;

const bench = await openBenchDatabase({ pools: 2, connectionsPerPool: Math.ceil(AGENTS / 2), prefix: "CPU" });
try {
  const agents = await makeAgents(bench, AGENTS);
  const total = JOBS + AGENTS * WARMUP;
  await seedClaimQueue(bench, total);
  const db = bench.pools[0]!.db;
  const database = new URL(bench.url).pathname.slice(1);
  const groupOf = (pid: number, cmdline: string) =>
    cmdline.startsWith("postgres:") && cmdline.includes(` ${database} `) ? "postgres" : pid === process.pid ? "node" : null;

  /** CPU ms per cycle of one measured phase: PostgreSQL's backends and this process (from /proc and from process.cpuUsage), and its rate. */
  const commits = async () => {
    await new Promise((resolve) => setTimeout(resolve, 1100)); // backends flush their statistics at most once a second
    const [row] = await query<{ n: number }>(db, sql`select xact_commit::int as n from pg_stat_database where datname = current_database()`);
    return row!.n;
  };
  async function measured(phase: () => Promise<number>) {
    const commitsBefore = await commits();
    const before = cpuSecondsByPid(groupOf);
    const usage = process.cpuUsage();
    const t0 = performance.now();
    const cycles = await phase();
    const ms = performance.now() - t0;
    const used = process.cpuUsage(usage);
    const cpu = cpuMsPerByPid(before, cpuSecondsByPid(groupOf), cycles);
    // Each statement outside a transaction commits on its own; less the first reading of this count, whose own commit it sees.
    const transactions = ((await commits()) - commitsBefore - 1) / cycles;
    return { cycles, perSecond: (cycles / ms) * 1000, postgres: cpu.postgres ?? NaN, node: (used.user + used.system) / 1000 / cycles, transactions };
  }
  const show = (name: string, m: Awaited<ReturnType<typeof measured>>) =>
    log(`${name}: ${m.cycles} cycles, ${Math.round(m.perSecond)} /s; CPU per cycle: PostgreSQL ${m.postgres.toFixed(3)} ms, Node ${m.node.toFixed(3)} ms, sum ${(m.postgres + m.node).toFixed(3)} ms; ${m.transactions.toFixed(2)} transactions`);

  /**
   * pg-boss: a warm-up round (runPgBoss), then a drain of JOBS jobs, measured from after their
   * insert. Its instances are stopped after, so their pools take no CPU in Retasc's phase.
   */
  const pgBossPhase = async () => {
    const boss = await startPgBoss(bench, Math.ceil(AGENTS / 2));
    try {
      return await pgBossDrain(boss);
    } finally {
      for (const instance of boss) await instance.stop({ graceful: false, wait: true });
    }
  };
  const pgBossDrain = async (boss: Awaited<ReturnType<typeof startPgBoss>>) => {
    await runPgBoss(bench, boss, AGENTS, WARMUP * AGENTS);
    for (let k = 0; k < JOBS; k += 1000) await boss[0]!.insert(Array.from({ length: Math.min(1000, JOBS - k) }, (_, n) => ({ name: QUEUE, data: { n: k + n } })));
    const workers = Array.from({ length: AGENTS }, (_, n) => boss[n % boss.length]!);
    const drained = await measured(async () => (await Promise.all(workers.map((b) => bossAgent(b)))).reduce((a, b) => a + b, 0));
    if (drained.cycles !== JOBS) throw new Error(`pg-boss completed ${drained.cycles} of ${JOBS}`);
    return drained;
  };

  const bossBefore = await pgBossPhase();
  show("pg-boss fetch + complete", bossBefore);

  await db.execute(sql`select pg_stat_reset()`);
  await Promise.all(agents.map((ctx) => retascAgent(ctx, WARMUP)));
  const session = profileFile ? new Session() : null;
  if (session) {
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 100 });
    await session.post("Profiler.start");
  }
  const ours = await measured(async () => (await Promise.all(agents.map((ctx) => retascAgent(ctx)))).reduce((a, b) => a + b, 0));
  if (session) {
    const { profile } = await session.post("Profiler.stop");
    session.disconnect();
    fs.writeFileSync(profileFile!, JSON.stringify(profile));
    log(`profile written to ${profileFile}`);
    for (const line of profileByLayer(profile, ours.cycles)) log(`  ${line}`);
  }
  show("Retasc claim + finish", ours);
  if (ours.cycles !== JOBS) throw new Error(`Retasc finished ${ours.cycles} of ${JOBS}`);

  const bossAfter = await pgBossPhase();
  show("pg-boss again", bossAfter);
  const bossMean = { postgres: (bossBefore.postgres + bossAfter.postgres) / 2, node: (bossBefore.node + bossAfter.node) / 2, perSecond: (bossBefore.perSecond + bossAfter.perSecond) / 2 };
  log(
    `ratio to pg-boss (mean): CPU per cycle PostgreSQL ${(ours.postgres / bossMean.postgres).toFixed(2)}x, Node ${(ours.node / bossMean.node).toFixed(2)}x, ` +
      `sum ${((ours.postgres + ours.node) / (bossMean.postgres + bossMean.node)).toFixed(2)}x; throughput ${(ours.perSecond / bossMean.perSecond).toFixed(2)}x`,
  );
  log(`load average ${fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
  if (process.argv.includes("--indexes")) {
    await new Promise((resolve) => setTimeout(resolve, 700)); // the statistics collector's flush
    const rows = await query<{ name: string; scans: number; entries: number }>(
      db,
      sql`select relname || '.' || indexrelname as name, idx_scan::int as scans, idx_tup_read::int as entries from pg_stat_user_indexes
           where relname in ('issues', 'leases', 'activity', 'outbox', 'relations') and idx_scan > 0 order by idx_scan desc`,
    );
    for (const row of rows) log(`  ${row.name}: ${row.scans} reads, ${row.entries} entries`);
  }
} finally {
  await bench.close();
}
process.exit(0);
