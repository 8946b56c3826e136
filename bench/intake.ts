/**
 * `npx tsx bench/intake.ts [--deliveries 1000] [--concurrency 16]`: GitHub intake under a worker
 * crash. N signed `issues.opened` deliveries (one source issue each, as GitHub signs them) are
 * POSTed to the built app on PostgreSQL (RETASC_WORKERS=off), processed by a separate
 * `workers/main.ts` on a private Redis that is SIGKILLed partway and started again. Afterwards
 * exactly N issues must exist, one per source issue, and a redelivery of every tenth changes
 * nothing. Prints deliveries/s (first POST to last issue) and the p99 from the POST's answer to
 * the issue existing, beside the HTTP floor measured in the same run: the same POSTs to an
 * unknown connector id (404, read and refused at the door).
 */
import type { ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { wholeNumberOption } from "./lib/args.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { distribution, log, round } from "./lib/stats.ts";

const DELIVERIES = wholeNumberOption("deliveries", 1_000);
const CONCURRENCY = wholeNumberOption("concurrency", 16);

useBenchPostgres();
const repoRoot = path.resolve(import.meta.dirname, "..");
process.env.RETASC_TEST_BUILD_DIR ??= path.join(repoRoot, "node_modules/.cache/retasc-test-build", `bench-${crypto.randomBytes(4).toString("hex")}`);
const { startSeededApp } = await import("../server/mcp/testing.ts");
const { freePort, runEntry } = await import("../server/testing/app-process.ts");
const { startWorker } = await import("./lib/worker-process.ts");
const { PrivateRedis } = await import("../server/testing/redis.ts");
const { githubDelivery } = await import("../test/fakes/github.ts");

const examples = JSON.parse(fs.readFileSync(path.join(repoRoot, "node_modules/@octokit/webhooks-examples/api.github.com/index.json"), "utf8")) as {
  name: string;
  examples: Record<string, any>[];
}[];
const openedExample = examples.find((e) => e.name === "issues")!.examples.find((x) => x.action === "opened")!;
const sourceIdOf = (i: number) => 70_000_000 + i;
function opened(i: number) {
  const payload = structuredClone(openedExample);
  Object.assign(payload.issue, { id: sourceIdOf(i), number: i + 1, title: `Intake bench issue ${i}`, author_association: "COLLABORATOR" });
  return payload;
}

/** POSTs requests `make(0..n-1)` with `CONCURRENCY` in flight; each answer's time (performance.now) by index. */
async function postAll(n: number, make: (i: number) => Promise<Request>, expected: number): Promise<{ answeredAt: number[]; seconds: number; latencies: number[] }> {
  const answeredAt: number[] = new Array(n);
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = next++;
        const request = await make(i);
        const sent = performance.now();
        const response = await fetch(request);
        await response.arrayBuffer();
        answeredAt[i] = performance.now();
        latencies.push(answeredAt[i]! - sent);
        if (response.status !== expected) throw new Error(`delivery ${i}: ${response.status}, expected ${expected}`);
      }
    }),
  );
  return { answeredAt, seconds: (performance.now() - t0) / 1000, latencies };
}

log("intake: building and starting the app (RETASC_WORKERS=off) on PostgreSQL, a private Redis");
const redis = await PrivateRedis.start();
const queueEnv = { REDIS_URL: redis.url, BULLMQ_PREFIX: `intake${crypto.randomBytes(3).toString("hex")}`, LOG_LEVEL: "warn", OUTBOX_POLL_MS: "200" };
const seeded = await startSeededApp(["INB"], { ...queueEnv, RETASC_WORKERS: "off" });
const sql = postgres(seeded.env.DATABASE_URL!, { max: 2, onnotice: () => {} });
let worker: ChildProcess | null = null;
try {
  const org = seeded.orgs.INB!;
  const connected = runEntry("server/admin/main.ts", ["connect", "--org", org.orgId, "--project", org.projectId, "--provider", "github", "--repo", "bench/intake", "--json"], seeded.env);
  if (connected.status !== 0) throw new Error(`connect failed:\n${connected.stderr}`);
  const { connectorId, secret } = JSON.parse(connected.stdout.trim()) as { connectorId: string; secret: string };
  const hook = (id: string) => `${seeded.app.url}/webhooks/github/${id}`;
  const bodies = Array.from({ length: DELIVERIES }, (_, i) => opened(i));

  log(`intake: baseline, ${DELIVERIES} signed deliveries to an unknown connector (404)`);
  const unknown = crypto.randomUUID();
  const floor = await postAll(DELIVERIES, (i) => githubDelivery(hook(unknown), secret, "issues", bodies[i]), 404);

  const [{ before }] = await sql<{ before: number }[]>`select count(*)::int as before from issues where org_id = ${org.orgId}`;
  const workerPort = await freePort();
  const workerEnv = { ...seeded.env, ...queueEnv, RETASC_WORKERS: "off" };
  worker = startWorker({ ...workerEnv, METRICS_PORT: String(workerPort) });

  // Which source issues exist, and since when: polled every 20 ms.
  const existsAt = new Map<string, number>();
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const rows = await sql<{ source_id: string }[]>`select source_id from intake_links where connector_id = ${connectorId}`;
      const now = performance.now();
      for (const row of rows) if (!existsAt.has(row.source_id)) existsAt.set(row.source_id, now);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const killAfter = Math.floor(DELIVERIES * 0.3);
  let killed = false;
  const crash = (async () => {
    while (existsAt.size < killAfter) await new Promise((r) => setTimeout(r, 10));
    worker!.kill("SIGKILL");
    await new Promise((r) => worker!.once("exit", r));
    killed = true;
    log(`intake: worker SIGKILLed with ${existsAt.size} issues in; restarting`);
    worker = startWorker({ ...workerEnv, METRICS_PORT: String(workerPort) });
  })();

  log(`intake: ${DELIVERIES} signed issues.opened deliveries, ${CONCURRENCY} in flight`);
  const t0 = performance.now();
  const run = await postAll(DELIVERIES, (i) => githubDelivery(hook(connectorId), secret, "issues", bodies[i]), 202);
  const deadline = Date.now() + 300_000;
  while (existsAt.size < DELIVERIES && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const lastAt = Math.max(...existsAt.values());
  await crash;
  if (!killed) throw new Error("the worker was never killed");

  // A redelivery of every tenth (GitHub's "Redeliver": a new delivery id), after the crash.
  const again = await postAll(Math.ceil(DELIVERIES / 10), (i) => githubDelivery(hook(connectorId), secret, "issues", bodies[i * 10]), 202);
  for (let i = 0; i < 100; i++) {
    const [{ left }] = await sql<{ left: number }[]>`select count(*)::int as left from intake_deliveries where connector_id = ${connectorId} and processed_at is null`;
    if (left === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  polling = false;
  await poller;

  const [{ issues, links, sources }] = await sql<{ issues: number; links: number; sources: number }[]>`
    select (select count(*)::int from issues where org_id = ${org.orgId}) - ${before}::int as issues,
           count(*)::int as links, count(distinct source_id)::int as sources
    from intake_links where connector_id = ${connectorId}`;
  const [{ unprocessed }] = await sql<{ unprocessed: number }[]>`select count(*)::int as unprocessed from intake_deliveries where connector_id = ${connectorId} and processed_at is null`;
  const missing = bodies.filter((_, i) => !existsAt.has(String(sourceIdOf(i)))).length;
  if (issues !== DELIVERIES || links !== DELIVERIES || sources !== DELIVERIES || missing !== 0 || unprocessed !== 0)
    throw new Error(`lost or doubled: ${issues} issues, ${links} links, ${sources} source issues, ${missing} never seen, ${unprocessed} unprocessed (of ${DELIVERIES})`);

  const toIssue = distribution(bodies.map((_, i) => Math.max(0, existsAt.get(String(sourceIdOf(i)))! - run.answeredAt[i]!)));
  const door = distribution(run.latencies);
  const floorLatency = distribution(floor.latencies);
  const rows = [
    `intake: ${DELIVERIES} deliveries, ${CONCURRENCY} in flight, worker SIGKILLed after ${killAfter} issues and restarted; ${issues} issues, one per source issue; ${again.answeredAt.length} redeliveries changed nothing`,
    `  end to end       ${round(DELIVERIES / ((lastAt - t0) / 1000), 1)} deliveries/s (first POST to last issue)`,
    `  receipt → issue  p50 ${round(toIssue.p50, 0)} ms, p99 ${round(toIssue.p99, 0)} ms, max ${round(toIssue.max, 0)} ms (polled every 20 ms)`,
    `  the door (202)   ${round(DELIVERIES / run.seconds, 1)} deliveries/s, answer p50 ${round(door.p50, 1)} ms, p99 ${round(door.p99, 1)} ms`,
    `  baseline (404)   ${round(DELIVERIES / floor.seconds, 1)} deliveries/s, answer p50 ${round(floorLatency.p50, 1)} ms, p99 ${round(floorLatency.p99, 1)} ms`,
  ];
  process.stdout.write(rows.join("\n") + "\n");
} finally {
  worker?.kill("SIGKILL");
  await sql.end();
  await seeded.close();
  await redis.close();
}
