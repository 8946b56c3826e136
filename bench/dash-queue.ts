/**
 * The Dash's queue page with 10,000 open issues, rendered server-side over HTTP by the
 * built app on PostgreSQL (session cookie, loader + React render, full HTML), beside
 * GET /healthz on the same app in the same run:
 * `npx tsx bench/dash-queue.ts [--quick]` (PostgreSQL: TEST_DATABASE_URL or the local default).
 * Pages measured: the first page, a deep page (offset 5,000) and a filtered page.
 * The graph has chains (so "why" walks the graph), deadlines, and live claims with checkpoints.
 */
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startDashBenchApp } from "./lib/dash-app.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { distribution, log, round, seededRandom, type Distribution } from "./lib/stats.ts";

export const QUEUE_TARGET_MS = 200;

export interface DashQueueResult {
  issues: number;
  iterations: number;
  pages: Record<"first" | "deep" | "filtered", Distribution>;
  healthz: Distribution;
  htmlBytes: number;
  pass: boolean;
  /** The machine's 1-minute load average at the end: other work on a shared machine inflates every figure. */
  loadAverage: number;
}

export async function dashQueueBench(options: { issues: number; iterations: number }): Promise<DashQueueResult> {
  // Before anything imports server/testing/db.ts, which reads the database settings once.
  useBenchPostgres();
  const { withPrincipal } = await import("../server/with-principal.ts");
  const { authenticateAgentKey } = await import("../server/orgs/index.ts");
  const { seedOwnedOrg } = await import("../server/testing/dash.ts");
  const { claimIssue, checkpoint } = await import("../server/queue/index.ts");
  const { seedGraph } = await import("./lib/seed.ts");

  const bench = await startDashBenchApp();
  const { services, get } = bench;
  try {
    const { db } = services;
    const org = await seedOwnedOrg(db, services.keyring, {
      ownerEmail: "bench@example.com",
      orgName: "Bench",
      prefix: "BEN",
      runtimes: ["claude-code"],
      claimCap: 100,
    });

    log(`seeding ${options.issues} issues`);
    const random = seededRandom(7);
    const now = new Date();
    const graph = {
      issues: Array.from({ length: options.issues }, (_, i) => ({
        title: `Queue issue ${i + 1}: ${"refactor the module ".repeat(2)}`,
        priority: Math.floor(random() * 5),
        dueAt: random() < 0.1 ? new Date(now.getTime() + (1 + random() * 72) * 3_600_000) : null,
        assigneeId: null,
        createdAt: new Date(now.getTime() - (options.issues - i) * 60_000),
      })),
      // Chains of up to 8: issue i blocks i+1 inside each chain, so many rows inherit urgency.
      edges: Array.from({ length: options.issues - 1 }, (_, i) => [i, i + 1] as [number, number]).filter(([i]) => (i + 1) % 8 !== 0),
    };
    await seedGraph(services, { orgId: org.orgId, projectId: org.projectId, prefix: "BEN", authorId: org.ownerId }, graph, now);

    // Live claims with checkpoints, as a fleet would leave them.
    const agent = withPrincipal(services, (await authenticateAgentKey(db, org.keys["claude-code"]))!);
    for (let i = 0; i < 40; i++) {
      const claim = await claimIssue(agent, { identifier: `BEN-${1 + i * 8}` });
      if (i % 2 === 0) await checkpoint(agent, { identifier: claim.identifier, claimToken: claim.claimToken, next: "keep going" });
    }

    const first = await get("/dash/queue");
    if (!first.body.includes("BEN-")) throw new Error("the queue page shows no issue");
    const paths = {
      first: "/dash/queue",
      deep: `/dash/queue?page=${Math.max(1, Math.floor(options.issues / 100))}`,
      filtered: "/dash/queue?status=todo&status=doing&priority=1&priority=2&tab=backlog",
    };
    const samples: Record<keyof typeof paths | "healthz", number[]> = { first: [], deep: [], filtered: [], healthz: [] };
    for (let i = 0; i < 10; i++) for (const p of [...Object.values(paths), "/healthz"]) await get(p);
    log(`measuring ${options.iterations} rounds`);
    for (let i = 0; i < options.iterations; i++) {
      // Interleaved, so the baseline and the pages see the same machine conditions.
      for (const [name, p] of Object.entries(paths) as [keyof typeof paths, string][]) samples[name].push((await get(p)).ms);
      samples.healthz.push((await get("/healthz")).ms);
    }
    const pages = {
      first: distribution(samples.first),
      deep: distribution(samples.deep),
      filtered: distribution(samples.filtered),
    };
    return {
      issues: options.issues,
      iterations: options.iterations,
      pages,
      healthz: distribution(samples.healthz),
      htmlBytes: first.bytes,
      pass: Object.values(pages).every((d) => d.p50 < QUEUE_TARGET_MS),
      loadAverage: os.loadavg()[0]!,
    };
  } finally {
    await bench.close();
  }
}

export function formatDashQueue(result: DashQueueResult): string {
  const line = (name: string, d: Distribution) =>
    `${name.padEnd(34)} p50 ${String(round(d.p50, 1)).padStart(6)} ms  p99 ${String(round(d.p99, 1)).padStart(6)} ms  ` +
    `(${round(d.p50 / result.healthz.p50, 1)}x /healthz p50)`;
  return [
    `Dash queue page, ${result.issues} open issues, ${result.iterations} requests each, full server-rendered HTML (${Math.round(result.htmlBytes / 1024)} KB):`,
    line("  first page", result.pages.first),
    line("  deep page (offset ~half)", result.pages.deep),
    line("  filtered (status, priority, tab)", result.pages.filtered),
    line("  baseline GET /healthz", result.healthz),
    `  target: every page p50 < ${QUEUE_TARGET_MS} ms: ${result.pass ? "PASS" : "FAIL"} (load average ${round(result.loadAverage, 1)} on ${os.cpus().length} cores)`,
  ].join("\n");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes("--quick");
  dashQueueBench({ issues: 10_000, iterations: quick ? 20 : 100 })
    .then((result) => {
      process.stdout.write(`\n${formatDashQueue(result)}\n`);
      process.exitCode = result.pass ? 0 : 1;
    })
    .catch((error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 2;
    });
}
