import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../config/index.ts";
import { createLogger } from "../log.ts";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "../mcp/testing.ts";
import { freePort } from "../testing/app-process.ts";
import { waitFor } from "../testing/wait.ts";
import { answerMetrics, startMetricsServer } from "../http/metrics.ts";

/**
 * /metrics over real HTTP from the built app after real MCP calls: claims (first and reclaim),
 * refusals by code, a stale write, a recorded lease expiry, the dispatch histogram, the
 * request latency per door, queue depth, jobs and pool gauges all move; without the token it
 * is refused, without METRICS_TOKEN it does not exist. /healthz tells strangers liveness only.
 */
const TOKEN = "metrics-token-for-the-test-0123456789";
let seeded: SeededApp;
const clients: Client[] = [];

beforeAll(async () => {
  seeded = await startSeededApp(["MET"], {
    METRICS_TOKEN: TOKEN,
    LEASE_TTL_SECONDS: "1",
    RECLAIM_SWEEP_MS: "300",
    RETASC_WORKERS: "inline",
  });
});
afterEach(({ task }) => {
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded?.app.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await seeded?.close();
});

const scrape = async (authorization?: string) =>
  fetch(`${seeded.app.url}/metrics`, authorization ? { headers: { authorization } } : {});

/** The sum of the samples of `name` whose labels include all of `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split("\n")) {
    const match = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const given = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => given[k] === v)) total += Number(match[3]);
  }
  return total;
}

const task = (title: string) => ({ title, work: true, changeType: "feat", noDependency: "metrics test work" });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("after MCP calls, every series moved; the scrape needs the token", async () => {
  expect((await scrape()).status).toBe(401);
  expect((await scrape("Bearer not-the-metrics-token-at-all")).status).toBe(401);
  const before = await (await scrape(`Bearer ${TOKEN}`)).text();

  const alice = await connectClient(seeded.endpoint, seeded.orgs.MET!.people.alice.key, { name: "alice" });
  const bob = await connectClient(seeded.endpoint, seeded.orgs.MET!.people.bob.key, { name: "bob" });
  clients.push(alice, bob);
  const issue = await callOk(alice, "save_issue", task("Measured work"));
  const first = await callOk(alice, "next_issue", {});
  expect(first.identifier).toBe(issue.identifier);
  expect((await callError(bob, "save_issue", { identifier: issue.identifier, status: "done" })).code).toBe("STALE_CLAIM");
  expect((await callError(alice, "get_issue", { identifier: "NOPE-1" })).code).toBe("NOT_FOUND");
  // The lease (1 s) lapses and the reclaim sweep (every 300 ms) records it, then Bob takes it over.
  await waitFor(
    async () => sample(await (await scrape(`Bearer ${TOKEN}`)).text(), "retasc_lease_expiries_recorded_total") > sample(before, "retasc_lease_expiries_recorded_total"),
    10_000,
    "the reclaim sweep to record the lapsed lease",
  );
  expect((await callError(alice, "heartbeat", { identifier: issue.identifier, claimToken: first.claimToken })).code).toBe("STALE_CLAIM");
  const again = await callOk(bob, "claim_issue", { identifier: issue.identifier });
  expect(again.fence).toBe(2);

  let after = "";
  for (let tries = 0; tries < 50; tries++) {
    after = await (await scrape(`Bearer ${TOKEN}`)).text();
    const jobDone = sample(after, "retasc_jobs_total", { result: "completed" }) > sample(before, "retasc_jobs_total", { result: "completed" });
    // The gauges read from the database are reused for 2 s.
    if (jobDone && sample(after, "retasc_issues", { status: "doing" }) === 1) break;
    await sleep(200);
  }
  const moved = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
  expect(moved("retasc_claims_total", { tool: "next_issue", kind: "first" })).toBe(1);
  expect(moved("retasc_claims_total", { tool: "claim_issue", kind: "reclaim" })).toBe(1);
  expect(moved("retasc_mcp_tool_refusals_total", { tool: "save_issue", code: "STALE_CLAIM" })).toBe(1);
  expect(moved("retasc_mcp_tool_refusals_total", { tool: "heartbeat", code: "STALE_CLAIM" })).toBe(1);
  expect(moved("retasc_mcp_tool_refusals_total", { tool: "get_issue", code: "NOT_FOUND" })).toBe(1);
  expect(moved("retasc_stale_writes_refused_total")).toBe(2);
  expect(moved("retasc_lease_expiries_recorded_total")).toBe(1);
  expect(moved("retasc_dispatch_duration_seconds_count")).toBe(1);
  expect(moved("retasc_mcp_tool_duration_seconds_count", { tool: "save_issue", outcome: "ok" })).toBe(1);
  expect(moved("retasc_mcp_tool_duration_seconds_count", { tool: "save_issue", outcome: "refused" })).toBe(1);
  expect(moved("retasc_http_request_duration_seconds_count", { door: "mcp", status: "200" })).toBeGreaterThanOrEqual(6);
  expect(moved("retasc_sweep_duration_seconds_count", { sweep: "sweep.reclaim", result: "ok" })).toBeGreaterThan(0);
  // The recorded reclaim queued a notification, which the in-process runner completed.
  expect(moved("retasc_jobs_total", { job: "notify.issue_event", result: "completed" })).toBeGreaterThanOrEqual(1);
  expect(sample(after, "retasc_issues", { status: "doing" })).toBe(1);
  expect(after).toMatch(/^retasc_outbox_oldest_pending_age_seconds \S+$/m);
  expect(after).toMatch(/^retasc_outbox_pending \d+$/m);
  expect(sample(after, "retasc_db_pool_size")).toBeGreaterThan(0);
  expect(after).toMatch(/^retasc_db_pool_busy \d+$/m);
  expect(after).toContain("# TYPE retasc_webhook_deliveries_total counter");
  expect(sample(after, "retasc_process_resident_memory_bytes")).toBeGreaterThan(0);
});

test("/healthz: liveness alone to strangers, readiness detail with the metrics token", async () => {
  const stranger = await fetch(`${seeded.app.url}/healthz`);
  expect(stranger.status).toBe(200);
  expect(await stranger.json()).toEqual({ ok: true });
  const wrong = await fetch(`${seeded.app.url}/healthz`, { headers: { authorization: "Bearer wrong-token-wrong-token" } });
  expect(await wrong.json()).toEqual({ ok: true });
  const operator = await fetch(`${seeded.app.url}/healthz`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(operator.status).toBe(200);
  const detail = await operator.json();
  expect(detail).toMatchObject({ ok: true, status: "ok", database: "ok", jobs: { runner: "inline", failed: 0 } });
  expect(detail.migrations.applied).toBe(detail.migrations.expected);
  expect(typeof detail.jobs.oldestPendingSeconds).toBe("number");
});

describe("without METRICS_TOKEN", () => {
  test("/metrics does not exist on the app's port (404)", async () => {
    const config = loadConfig({ NODE_ENV: "test" });
    const server = http.createServer((req, res) => void answerMetrics(req, res, config));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain("retasc_");
    } finally {
      server.close();
    }
  });

  test("METRICS_PORT listens on 127.0.0.1 only and serves /metrics and the readiness detail", async () => {
    const port = await freePort();
    const readiness = async () => ({ ok: true, detail: { database: "ok" } });
    const server = await startMetricsServer(port, readiness, createLogger("silent"));
    try {
      expect((server.address() as AddressInfo).address).toBe("127.0.0.1");
      const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain("# TYPE retasc_claims_total counter");
      expect(await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()).toEqual({ ok: true, status: "ok", database: "ok" });
      expect((await fetch(`http://127.0.0.1:${port}/dash`)).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
