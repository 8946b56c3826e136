import { sql } from "drizzle-orm";
import { query } from "../db/client.ts";
import type { Config } from "../server/config/index.ts";
import type { Services } from "../server/context.ts";
import type { Logger } from "../server/log.ts";
import { metrics } from "../server/metrics/index.ts";
import { foldIssueCounts } from "../server/metrics/issue-counts.ts";
import { sampleQueueDepth } from "../server/dash/charts-record.ts";
import { reclaimSweep, slaSweep } from "../server/queue/index.ts";
import { stallSweep } from "../server/queue/stall-sweep.ts";
import { staleVerificationSweep } from "../server/verification/stale.ts";
import { issueTermsSweep } from "../server/issues/similar.ts";
import { pruneActivity } from "../server/activity/retention.ts";
import { backfillLabelOrgs } from "../server/issues/label-orgs.ts";
import { errorLabel } from "./catalog.ts";
import { arriveAt, settleReceipt } from "./receipts.ts";

/** A repeating job: its body runs once per tick of `everyMs`, however many runners there are. */
export interface SweepDefinition {
  name: string;
  everyMs: number;
  run(services: Services): Promise<Record<string, number>>;
}

export type SweepOutcome = { ran: true; result: Record<string, number> } | { ran: false };

/**
 * Runs one tick of a sweep unless some runner already took it. The tick is claimed first (a
 * receipt `<name>@<tick>`), so BullMQ redelivering a tick, or several in-process runners on one
 * database, never run it twice; a tick lost to a crash is made up by the next one, because
 * every sweep works from the current state of the database.
 */
export async function runSweepTick(
  services: Services,
  log: Logger,
  sweep: SweepDefinition,
  tickMs: number,
): Promise<SweepOutcome> {
  const key = `${sweep.name}@${tickMs}`;
  if (!(await arriveAt(services.db, key, sweep.name))) return { ran: false };
  const started = Date.now();
  try {
    const result = await sweep.run(services);
    metrics.sweep(sweep.name, Date.now() - started, true);
    await settleReceipt(services.db, key, { result });
    log.debug({ sweep: sweep.name, tick: tickMs, ms: Date.now() - started, ...result }, "sweep ran");
    return { ran: true, result };
  } catch (error) {
    metrics.sweep(sweep.name, Date.now() - started, false);
    await settleReceipt(services.db, key, { error: errorLabel(error) }).catch(() => {});
    throw error;
  }
}

const RETENTION = sql`interval '7 days'`;

/** Forgets finished background work after a week; failed outbox rows are kept for an operator. */
export async function pruneJobHistory(services: Services): Promise<Record<string, number>> {
  const [row] = await query<{ outbox: number; receipts: number }>(
    services.db,
    sql`with o as (delete from outbox where completed_at < now() - ${RETENTION} returning 1),
             r as (delete from job_receipts where created_at < now() - ${RETENTION} returning 1)
        select (select count(*)::int from o) as outbox, (select count(*)::int from r) as receipts`,
  );
  return { outbox: Number(row?.outbox ?? 0), receipts: Number(row?.receipts ?? 0) };
}

/**
 * Gathers the planner's statistics of every table. PGlite runs no autovacuum, so in the embedded
 * mode nothing else would: the hot statements name the org beside an id (decision 099), and on
 * tables never analyzed the planner can take an index led by the org for them, reading the org's
 * open issues for each claim (decision 102).
 */
export async function analyzeTables(services: Services): Promise<Record<string, number>> {
  await services.db.execute(sql`analyze`);
  return { analyzed: 1 };
}

/** The app's repeating jobs, at the intervals from config. */
export function retascSweeps(config: Config): SweepDefinition[] {
  return [
    // The embedded mode's statistics; PostgreSQL's autovacuum keeps them on a server.
    ...(config.mode === "embedded" ? [{ name: "sweep.analyze", everyMs: 600_000, run: analyzeTables }] : []),
    {
      name: "sweep.reclaim",
      everyMs: config.RECLAIM_SWEEP_MS,
      run: async (services) => {
        const result = await reclaimSweep(services);
        metrics.leaseExpiriesSwept(result.reclaimed);
        return result;
      },
    },
    { name: "sweep.sla", everyMs: config.SLA_SWEEP_MS, run: slaSweep },
    // Stalled claims marked in their activity, and released where the project chose it (decision 062).
    { name: "sweep.stall", everyMs: 60_000, run: stallSweep },
    // Finishes CI left pending past their window: told of once (decision 062).
    { name: "sweep.verification-stale", everyMs: 60_000, run: staleVerificationSweep },
    // The duplicate gate's term index for issues filed before it or written by an import (decision 066).
    { name: "sweep.issue-terms", everyMs: 60_000, run: issueTermsSweep },
    { name: "sweep.prune", everyMs: 3_600_000, run: pruneJobHistory },
    // The issue counts /metrics reads: the changes the triggers appended, folded (decision 077).
    { name: "sweep.issue-counts", everyMs: 10_000, run: foldIssueCounts },
    // The activity log past ACTIVITY_RETENTION_DAYS, in bounded batches (decision 077).
    { name: "sweep.activity-retention", everyMs: 600_000, run: pruneActivity },
    // issue_labels rows from before they carried their org, filled in bounded batches (decision 099).
    { name: "sweep.issue-labels-org", everyMs: 600_000, run: backfillLabelOrgs },
    // The Fleet page's queue depth chart: the current hour's row, refreshed so a new org's hour fills in soon.
    { name: "sweep.fleet-sample", everyMs: 600_000, run: sampleQueueDepth },
  ];
}
