/**
 * CPU per claim + fenced finish (issue 30, decision 104): the service-layer half of
 * `throughput.ts` (32 agents over two pools, 2,000 issues plus the warm-up's, one project), with the
 * CPU seconds PostgreSQL's backends for this run's database and this process used while it ran,
 * per claim + finish, from /proc (Linux). CPU time moves far less with the machine's load than the
 * throughput does, so two commits compare on it when the machine is shared. `--indexes` also prints
 * how often each index of the hot tables was read, and how many entries. About 30 s.
 *
 * `npx tsx bench/claim-cpu.ts [--indexes]`
 */
import { sql } from "drizzle-orm";
import { useBenchPostgres } from "./lib/postgres-env.ts";

useBenchPostgres();
const { makeAgents, openBenchDatabase } = await import("./lib/env.ts");
const { seedGraph } = await import("./lib/seed.ts");
const { retascAgent } = await import("./throughput.ts");
const { query } = await import("../db/client.ts");
const { cpuSecondsByGroup, cpuMsPer } = await import("./lib/cpu.ts");
const { log } = await import("./lib/stats.ts");

const AGENTS = 32;
const TOTAL = 2_000 + AGENTS * 5;
const bench = await openBenchDatabase({ pools: 2, connectionsPerPool: AGENTS / 2, prefix: "CPU" });
try {
  const agents = await makeAgents(bench, AGENTS);
  const start = Date.now() - TOTAL * 1000;
  const seed = Array.from({ length: TOTAL }, (_, i) => ({
    title: `Issue ${i + 1}`,
    priority: i % 5,
    dueAt: null,
    assigneeId: null,
    createdAt: new Date(start + i * 1000),
  }));
  await seedGraph(bench.pools[0]!, { ...bench.org, authorId: bench.org.agents.alice.userId }, { issues: seed, edges: [] }, new Date());
  const db = bench.pools[0]!.db;
  await db.execute(sql`analyze`);
  await db.execute(sql`select pg_stat_reset()`);
  const database = new URL(bench.url).pathname.slice(1);
  const groupOf = (pid: number, cmdline: string) =>
    cmdline.startsWith("postgres:") && cmdline.includes(` ${database} `) ? "postgres" : pid === process.pid ? "node" : null;
  const before = cpuSecondsByGroup(groupOf);
  const t0 = performance.now();
  const finished = (await Promise.all(agents.map((ctx) => retascAgent(ctx)))).reduce((a, b) => a + b, 0);
  const ms = performance.now() - t0;
  const cpu = cpuMsPer(before, cpuSecondsByGroup(groupOf), finished);
  log(`${finished} claim + finish, ${AGENTS} agents: ${Math.round((finished / ms) * 1000)} /s`);
  log(`CPU per claim + finish: PostgreSQL ${cpu.postgres?.toFixed(2)} ms, this process ${cpu.node?.toFixed(2)} ms`);
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
