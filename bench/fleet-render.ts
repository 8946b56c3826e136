/**
 * The Dash's Fleet page with a week of history, 100,000 activity rows in the org (and 10,000
 * finished leases, 168 sampled hours), rendered server-side over HTTP by the built app on
 * PostgreSQL (session cookie, loader + React render, full HTML), beside GET /healthz on the
 * same app in the same run: `npx tsx bench/fleet-render.ts [--quick] [--rows N]`.
 * Pages measured: the day view and the week view (?range=week). Also prints the plan of the
 * reclaims count, the one chart query that reads the activity log.
 */
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { wholeNumberOption } from "./lib/args.ts";
import { startDashBenchApp } from "./lib/dash-app.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { distribution, log, round, type Distribution } from "./lib/stats.ts";

export const FLEET_TARGET_MS = 200;
const ISSUES = 2_000;

export async function fleetRenderBench(options: { rows: number; iterations: number }) {
  // Before anything imports server/testing/db.ts, which reads the database settings once.
  useBenchPostgres();
  const { query } = await import("../db/client.ts");
  const { seedOwnedOrg } = await import("../server/testing/dash.ts");
  const { seedGraph } = await import("./lib/seed.ts");

  const bench = await startDashBenchApp();
  const { services, get } = bench;
  try {
    const { db } = services;
    const org = await seedOwnedOrg(db, services.keyring, { ownerEmail: "bench@example.com", orgName: "Bench", prefix: "FLB", runtimes: ["claude-code"], claimCap: 100 });
    const now = new Date();
    log(`seeding ${ISSUES} issues, ${ISSUES * 5} finished leases, ${options.rows} activity rows over a week`);
    const graph = {
      issues: Array.from({ length: ISSUES }, (_, i) => ({
        title: `Fleet issue ${i + 1}`,
        priority: i % 5,
        dueAt: null,
        assigneeId: null,
        createdAt: new Date(now.getTime() - 8 * 86_400_000 + i * 1000),
      })),
      edges: Array.from({ length: ISSUES - 1 }, (_, i) => [i, i + 1] as [number, number]).filter(([i]) => (i + 1) % 10 !== 0),
    };
    await seedGraph(services, { orgId: org.orgId, projectId: org.projectId, prefix: "FLB", authorId: org.ownerId }, graph, now);
    const week = sql`interval '7 days'`;
    await query(db, sql`update issues set first_claimed_at = ${now.toISOString()}::timestamptz - interval '8 days' where org_id = ${org.orgId}`);
    await query(
      db,
      sql`insert into leases (id, org_id, issue_id, fence, user_id, runtime, claimed_at, heartbeat_at, expires_at, ended_at, end_reason)
          select gen_random_uuid()::text, org_id, id, fence, ${org.ownerId}, 'claude-code', t - interval '20 minutes', t, t + interval '10 minutes', t, 'finished'
          from (select i.org_id, i.id, 1000 + g as fence, ${now.toISOString()}::timestamptz - random() * ${week} as t
                from issues i cross join generate_series(1, 5) g where i.org_id = ${org.orgId}) f`,
    );
    await query(
      db,
      sql`insert into activity (org_id, issue_id, kind, runtime, facts, created_at)
          select ${org.orgId}, ids.a[1 + g % cardinality(ids.a)], (array['claimed', 'heartbeat', 'checkpoint', 'finished', 'released'])[1 + g % 5],
                 'claude-code', '{}'::jsonb, ${now.toISOString()}::timestamptz - random() * ${week}
          from generate_series(1, ${options.rows}) g cross join (select array_agg(id) as a from issues where org_id = ${org.orgId}) ids`,
    );
    // One in fifty entries is a reclaim.
    await query(db, sql`update activity set kind = 'reclaimed' where org_id = ${org.orgId} and id % 50 = 0`);
    await query(
      db,
      sql`insert into fleet_hours (org_id, hour, stale_refused, depth)
          select ${org.orgId}, date_trunc('hour', ${now.toISOString()}::timestamptz) - h * interval '1 hour', h % 3,
                 jsonb_build_object('ready', 500 + h, 'blocked', 300, 'doing', 40, 'review', 12)
          from generate_series(0, 167) h`,
    );
    await query(db, sql`analyze`);
    const [{ n: rows }] = (await query<{ n: number }>(db, sql`select count(*)::int as n from activity where org_id = ${org.orgId}`)) as [{ n: number }];
    const plan = await query<{ "QUERY PLAN": string }>(
      db,
      sql`explain analyze select count(*) from activity where org_id = ${org.orgId} and kind = 'reclaimed' and created_at >= ${now.toISOString()}::timestamptz - ${week}`,
    );

    const first = await get("/dash");
    if (!first.body.includes('data-testid="chart-finished"')) throw new Error("the Fleet page shows no chart");
    const paths = { day: "/dash", week: "/dash?range=week" };
    const samples: Record<keyof typeof paths | "healthz", number[]> = { day: [], week: [], healthz: [] };
    for (let i = 0; i < 5; i++) for (const p of [...Object.values(paths), "/healthz"]) await get(p);
    log(`measuring ${options.iterations} rounds`);
    for (let i = 0; i < options.iterations; i++) {
      for (const [name, p] of Object.entries(paths) as [keyof typeof paths, string][]) samples[name].push((await get(p)).ms);
      samples.healthz.push((await get("/healthz")).ms);
    }
    const pages = { day: distribution(samples.day), week: distribution(samples.week) };
    return {
      rows,
      iterations: options.iterations,
      pages,
      healthz: distribution(samples.healthz),
      htmlBytes: first.bytes,
      plan: plan.map((r) => r["QUERY PLAN"]).join("\n"),
      pass: Object.values(pages).every((d) => d.p50 < FLEET_TARGET_MS),
      loadAverage: os.loadavg()[0]!,
    };
  } finally {
    await bench.close();
  }
}
export type FleetRenderResult = Awaited<ReturnType<typeof fleetRenderBench>>;

export function formatFleetRender(result: FleetRenderResult): string {
  const line = (name: string, d: Distribution) =>
    `${name.padEnd(30)} p50 ${String(round(d.p50, 1)).padStart(6)} ms  p99 ${String(round(d.p99, 1)).padStart(6)} ms  ` +
    `(${round(d.p50 / result.healthz.p50, 1)}x /healthz p50)`;
  return [
    `Dash Fleet page, ${result.rows} activity rows in the org, ${result.iterations} requests each, full server-rendered HTML (${Math.round(result.htmlBytes / 1024)} KB):`,
    line("  day view", result.pages.day),
    line("  week view (?range=week)", result.pages.week),
    line("  baseline GET /healthz", result.healthz),
    `  target: each view p50 < ${FLEET_TARGET_MS} ms: ${result.pass ? "PASS" : "FAIL"} (load average ${round(result.loadAverage, 1)} on ${os.cpus().length} cores)`,
    "  the reclaims count over the week:",
    ...result.plan.split("\n").map((l) => `    ${l}`),
  ].join("\n");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes("--quick");
  fleetRenderBench({ rows: wholeNumberOption("rows", quick ? 10_000 : 100_000), iterations: quick ? 10 : 50 })
    .then((result) => {
      process.stdout.write(`\n${formatFleetRender(result)}\n`);
      process.exitCode = result.pass ? 0 : 1;
    })
    .catch((error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    });
}
