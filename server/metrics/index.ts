import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from "prom-client";
import { query, type Database, type Db } from "../../db/client.ts";
import type { Config } from "../config/index.ts";
import { readIssueCounts } from "./issue-counts.ts";
import { PairCounter, PairHistogram } from "./recorders.ts";

/**
 * Marks a claim reply whose claim ended an expired lease and recorded it (retasc_record_expiry
 * said so with its outbox notice) before the reclaim sweep got there: set by the claim
 * (server/queue/claim.ts), counted here (claimsIn), so metrics import nothing of the queue. Keyed
 * by a symbol, it never reaches the wire, so the tools' output schemas stay as they are.
 * Symbol.for: the app's bundle and main.ts each hold a copy of this module.
 */
export const RECORDED_EXPIRY = Symbol.for("retasc.claim.recordedExpiry");

/**
 * The Prometheus metrics of this process (`/metrics`, docs/operations.md lists each series and
 * what to alert on). Every door counts here, never a domain function: the MCP tool wrapper
 * (server/mcp/invoke.ts), the HTTP edge, the job runners and sweeps (workers/), the webhook
 * routes. Label values are closed sets (door, tool name, error code, status, job name,
 * provider), never ids or user input, so the series stay few.
 *
 * One registry per process: the app's build bundles its own copy of this module beside main.ts's
 * (a webhook route counting in the bundle must reach the registry main.ts serves), so the
 * instruments live on globalThis.
 */
function createInstruments() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "retasc_" });
  const seconds = (ms: number) => ms / 1000;
  const fast = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
  // prom-client's registry takes any metric with a name and get(); its Metric type names its own classes.
  const registered = <M extends PairHistogram | PairCounter>(metric: M) => (registry.registerMetric(metric as unknown as Metric), metric);
  const instruments = {
    registry,
    seconds,
    // Recorded on every request and every tool call: without allocating (recorders.ts).
    httpRequests: registered(new PairHistogram(
      "retasc_http_request_duration_seconds",
      "HTTP requests by door (mcp, dash, api-cli, auth, webhooks, static, other) and status code, from arrival to the last byte written",
      ["door", "status"],
      fast,
    )),
    toolCalls: registered(new PairHistogram("retasc_mcp_tool_duration_seconds", "MCP tool calls by tool and outcome (ok, refused, failed)", ["tool", "outcome"], fast)),
    toolRefusals: new Counter({
      name: "retasc_mcp_tool_refusals_total",
      help: "MCP tool calls refused, by tool and error code (INTERNAL for a failure on the server)",
      labelNames: ["tool", "code"] as const,
      registers: [registry],
    }),
    claims: registered(new PairCounter(
      "retasc_claims_total",
      "Claims taken, by tool; kind=first for an issue's first claim, reclaim when it was held before (expired or released)",
      ["tool", "kind"],
    )),
    staleWrites: new Counter({
      name: "retasc_stale_writes_refused_total",
      help: "Writes refused with STALE_CLAIM (a token whose lease expired or was taken over), by tool",
      labelNames: ["tool"] as const,
      registers: [registry],
    }),
    dispatch: registered(new PairHistogram(
      "retasc_dispatch_duration_seconds",
      "next_issue from the call to its reply, whatever the result (claimed, empty, refused)",
      [],
      [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    )),
    leaseExpiries: new Counter({
      name: "retasc_lease_expiries_recorded_total",
      help: "Expired leases ended and logged as reclaimed, by who got there first: by=sweep (the reclaim sweep) or by=claim (a claim taking the expired issue over)",
      labelNames: ["by"] as const,
      registers: [registry],
    }),
    sweeps: new Histogram({
      name: "retasc_sweep_duration_seconds",
      help: "Sweep ticks run by this process, by sweep and result (ok, failed)",
      labelNames: ["sweep", "result"] as const,
      buckets: [0.005, 0.025, 0.1, 0.5, 1, 5, 15, 60],
      registers: [registry],
    }),
    jobs: new Counter({
      name: "retasc_jobs_total",
      help: "Outbox job attempts run by this process, by job and result (completed, retry: failed and will be retried, failed: failed for good)",
      labelNames: ["job", "result"] as const,
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: "retasc_webhook_deliveries_total",
      help: "Webhook deliveries received, by provider and result (accepted, duplicate, refused: bad signature or payload, failed)",
      labelNames: ["provider", "result"] as const,
      registers: [registry],
    }),
    heavyReadsRunning: new Gauge({
      name: "retasc_heavy_reads_running",
      help: "Dash pages and large MCP list replies being answered by this process (at most HEAVY_READS_AT_ONCE)",
      registers: [registry],
    }),
    heavyReadsQueued: new Gauge({
      name: "retasc_heavy_reads_queued",
      help: "Dash pages and large MCP list replies waiting for a slot in this process (at most HEAVY_READS_QUEUED; past it, 503)",
      registers: [registry],
    }),
    gaugesFrom: null as null | { db: Db; database: Database },
  };
  // Both exposed from the start, at 0, so rate() and increase() see the first expiry.
  for (const by of ["sweep", "claim"]) instruments.leaseExpiries.inc({ by }, 0);
  return instruments;
}

type Instruments = ReturnType<typeof createInstruments>;
const instruments: Instruments = ((globalThis as Record<symbol, unknown>)[Symbol.for("retasc.metrics")] ??= createInstruments()) as Instruments;

const CLAIMING_TOOLS = new Set(["next_issue", "claim_issue", "next_batch"]);

type Claim = { fence?: unknown; [RECORDED_EXPIRY]?: unknown };
function countClaim(tool: string, claim: Claim) {
  if (typeof claim.fence === "number") instruments.claims.inc(tool, claim.fence > 1 ? "reclaim" : "first");
  if (claim[RECORDED_EXPIRY] === true) instruments.leaseExpiries.inc({ by: "claim" });
}

/** The counters and histograms the doors record into. */
export const metrics = {
  httpRequest(door: string, status: number, ms: number) {
    instruments.httpRequests.observeMs(door, status, ms);
  },
  /** A tool call's outcome; `code` is the error code of a refusal, "INTERNAL" of a failure. */
  toolCall(tool: string, ms: number, code: string | null, internal = false) {
    const outcome = internal ? "failed" : code ? "refused" : "ok";
    instruments.toolCalls.observeMs(tool, outcome, ms);
    if (code) instruments.toolRefusals.inc({ tool, code });
    if (code === "STALE_CLAIM") instruments.staleWrites.inc({ tool });
    if (tool === "next_issue") instruments.dispatch.observeMs("", "", ms);
  },
  /** The claims in a successful reply of a claiming tool (next_issue, claim_issue, next_batch with claim). */
  claimsIn(tool: string, output: unknown) {
    if (!CLAIMING_TOOLS.has(tool) || typeof output !== "object" || output === null) return;
    const reply = output as Claim & { claimToken?: unknown; claims?: unknown };
    if (Array.isArray(reply.claims)) {
      for (let index = 0; index < reply.claims.length; index++) countClaim(tool, reply.claims[index] as Claim);
    } else if (typeof reply.claimToken === "string") countClaim(tool, reply);
  },
  /** The expiries one reclaim sweep tick recorded. */
  leaseExpiriesSwept(count: number) {
    if (count > 0) instruments.leaseExpiries.inc({ by: "sweep" }, count);
  },
  sweep(sweep: string, ms: number, ok: boolean) {
    instruments.sweeps.observe({ sweep, result: ok ? "ok" : "failed" }, instruments.seconds(ms));
  },
  job(job: string, result: "completed" | "retry" | "failed") {
    instruments.jobs.inc({ job, result });
  },
  /** The heavy reads running and queued now (server/http/heavy-reads.ts). */
  heavyReads(running: number, queued: number) {
    instruments.heavyReadsRunning.set(running);
    instruments.heavyReadsQueued.set(queued);
  },
  /** For the webhook routes: one call per delivery received. */
  webhookDelivery(provider: string, result: "accepted" | "duplicate" | "refused" | "failed") {
    instruments.webhookDeliveries.inc({ provider, result });
  },
};

/** How long a database read of the gauges is reused: the scrapes of several Prometheus servers at once cost one read. */
const GAUGE_READ_MS = 2_000;

/**
 * Gauges read at scrape time: issues by status, the outbox's backlog and its oldest waiting row,
 * and this process's database pool. Called once, by the process that serves /metrics.
 */
export function registerDatabaseGauges(database: Database): void {
  if (instruments.gaugesFrom) {
    instruments.gaugesFrom = { db: database.db, database };
    return;
  }
  instruments.gaugesFrom = { db: database.db, database };
  const { registry } = instruments;
  let cached: { at: number; reading: Promise<DatabaseReading> } | null = null;
  const reading = () => {
    const now = Date.now();
    if (!cached || now - cached.at > GAUGE_READ_MS) {
      const read = readDatabase(instruments.gaugesFrom!.db);
      cached = { at: now, reading: read };
      read.catch(() => (cached = null));
    }
    return cached.reading;
  };
  new Gauge({
    name: "retasc_issues",
    help: "Issues by status, every org (kept by triggers, read at most every 2 s)",
    labelNames: ["status"] as const,
    registers: [registry],
    async collect() {
      const { statuses } = await reading();
      this.reset();
      for (const [status, n] of statuses) this.set({ status }, n);
    },
  });
  new Gauge({
    name: "retasc_outbox_pending",
    help: "Outbox rows not yet completed or failed",
    registers: [registry],
    async collect() {
      this.set((await reading()).outboxPending);
    },
  });
  new Gauge({
    name: "retasc_outbox_oldest_pending_age_seconds",
    help: "Age of the oldest outbox row not yet completed or failed (0 when none)",
    registers: [registry],
    async collect() {
      this.set((await reading()).outboxOldestAgeSeconds);
    },
  });
  new Gauge({
    name: "retasc_outbox_failed",
    help: "Outbox rows that failed for good (kept for an operator)",
    registers: [registry],
    async collect() {
      this.set((await reading()).outboxFailed);
    },
  });
  new Gauge({
    name: "retasc_db_pool_size",
    help: "Connections this process's database pool may open",
    registers: [registry],
    collect() {
      this.set(instruments.gaugesFrom!.database.pool().max);
    },
  });
  new Gauge({
    name: "retasc_db_pool_busy",
    help: "Connections of this process's pool in use: open transactions and statements outside one (at most the pool size)",
    registers: [registry],
    collect() {
      const pool = instruments.gaugesFrom!.database.pool();
      this.set(Math.min(pool.max, pool.inUse));
    },
  });
  new Gauge({
    name: "retasc_db_pool_waiting",
    help: "Transactions and statements of this process waiting for a free pool connection",
    registers: [registry],
    collect() {
      const pool = instruments.gaugesFrom!.database.pool();
      this.set(Math.max(0, pool.inUse - pool.max));
    },
  });
}

interface DatabaseReading {
  statuses: [string, number][];
  outboxPending: number;
  outboxFailed: number;
  outboxOldestAgeSeconds: number;
}

/** What the database gauges show, read once for every gauge of a scrape. */
export async function readDatabase(db: Db): Promise<DatabaseReading> {
  const statuses = await readIssueCounts(db);
  // Each figure through its partial index (outbox_open_idx, outbox_failed_idx): the week of
  // completed rows kept for the prune is never read.
  const [outbox] = await query<{ pending: number; failed: number; oldest: number | null }>(
    db,
    sql`select (select count(*) from outbox where completed_at is null and failed_at is null)::int as pending,
               (select count(*) from outbox where failed_at is not null and completed_at is null)::int as failed,
               (select extract(epoch from now() - min(created_at))::float8 from outbox where completed_at is null and failed_at is null) as oldest`,
  );
  return {
    statuses,
    outboxPending: Number(outbox?.pending ?? 0),
    outboxFailed: Number(outbox?.failed ?? 0),
    outboxOldestAgeSeconds: Math.max(0, Number(outbox?.oldest ?? 0)),
  };
}

/** The exposition of every series, for a scrape. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: instruments.registry.contentType, body: await instruments.registry.metrics() };
}

/**
 * Whether the request carries the metrics token (`Authorization: Bearer <METRICS_TOKEN>`),
 * compared in constant time. False when no token is configured: then nothing is shown.
 */
export function hasMetricsToken(config: Pick<Config, "METRICS_TOKEN">, authorization: string | null | undefined): boolean {
  const expected = config.METRICS_TOKEN;
  if (!expected || !authorization) return false;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) return false;
  const digest = (s: string) => crypto.createHash("sha256").update(s).digest();
  return crypto.timingSafeEqual(digest(match[1]!), digest(expected));
}
