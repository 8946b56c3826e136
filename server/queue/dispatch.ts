import { sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import { query, type Db } from "../../db/client.ts";
import { dispatchable, dispatchOrder, inLanes, isOpen, othersLanes } from "../../db/schema/dispatch.ts";
import { issues } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { inTransaction, type WriteScope } from "../issues/store.ts";
import { slaSweepOrg } from "./sla.ts";
import { inScope } from "../orgs/scope.ts";

/** The queue's reading of the dispatch rule (db/schema/dispatch.ts): the caller's scope and lanes, ready counts, deadlines first. */

/** Dispatch reads alias issues as `i`, so the SQL fragments below apply to typed selects too. */
export const i = alias(issues, "i");

export const order = dispatchOrder(i);

/** The caller's human as an SQL operand (null for a principal without one). */
export function me(ctx: Ctx): SQL {
  const userId = ctx.principal.userId;
  return userId ? sql`${userId}::text` : sql`null::text`;
}

export const dispatchableAt = (now: Date) => dispatchable(i, sql`${now.toISOString()}::timestamptz`);

/** The key's project, or the whole org for a key without one; either within the member's project scope (server/orgs/scope.ts). */
export function scopeOf(ctx: Ctx): SQL {
  const within = inScope(ctx.principal, sql`i.project_id`);
  return ctx.principal.projectId
    ? sql`i.project_id = ${ctx.principal.projectId} and i.org_id = ${ctx.principal.orgId} and ${within}`
    : sql`i.org_id = ${ctx.principal.orgId} and ${within}`;
}

/** Lanes: the caller's human plus unassigned, or all of them. Nobody is ever handed their own work to review. */
export function laneOf(ctx: Ctx, allLanes: boolean | undefined): SQL {
  return inLanes(i, me(ctx), allLanes ? sql`true` : sql`false`);
}

export async function countReady(db: Db, ctx: Ctx, now: Date, lane: SQL): Promise<number> {
  const rows = await query<{ n: number }>(
    db,
    sql`select count(*)::int as n from issues i where ${scopeOf(ctx)} and ${dispatchableAt(now)} and ${lane}`,
  );
  return Number(rows[0]?.n ?? 0);
}

/** Open issues from outside the team that no person has accepted yet (never dispatched). */
async function countAwaitingTriage(ctx: Ctx): Promise<number> {
  const rows = await query<{ n: number }>(
    ctx.db,
    sql`select count(*)::int as n from issues i where ${scopeOf(ctx)} and i.triage = 'pending' and ${isOpen(i.status)}`,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Finished issues whose CI verification is pending and which hold open work in scope back
 * (decision 045): at most five, for next_issue's explanation.
 */
async function pendingVerifications(ctx: Ctx): Promise<string[]> {
  const rows = await query<{ identifier: string }>(
    ctx.db,
    sql`select distinct b.identifier from issues i
        join relations r on r.target_id = i.id and r.type = 'blocks'
        join issues b on b.id = r.source_id
        where ${scopeOf(ctx)} and i.open_blocker_count > 0 and ${isOpen(i.status)} and b.status = 'done' and b.verification = 'pending'
        order by b.identifier limit 5`,
  );
  return rows.map((row) => row.identifier);
}

/** What an empty pick found: in retasc_empty_poll's words, or counted here (next_batch). */
export interface EmptyFigures {
  ready: number;
  otherLanes: number;
  awaitingTriage: number;
  awaitingVerification: string[];
  /** When the org's next live lease lapses (ISO), or null when none is held. */
  nextLapse: string | null;
}

/** The longest an empty poll asks the caller to wait: new work and finishes can come at any moment. */
export const RETRY_AFTER_MAX_SECONDS = 30;

/**
 * Seconds until the next poll can find something (decision 076): at once when ready work was
 * claimed concurrently, else when the org's next lease lapses, at most RETRY_AFTER_MAX_SECONDS.
 */
export function retryAfterSeconds(figures: Pick<EmptyFigures, "ready" | "nextLapse">, now: Date): number {
  if (figures.ready > 0) return 1;
  if (!figures.nextLapse) return RETRY_AFTER_MAX_SECONDS;
  const seconds = Math.ceil((new Date(figures.nextLapse).getTime() - now.getTime()) / 1000);
  return Math.min(RETRY_AFTER_MAX_SECONDS, Math.max(1, seconds));
}

/** Counted by separate statements, for next_batch; next_issue has retasc_empty_poll count them inside its pick. */
export async function emptyFigures(ctx: Ctx, now: Date, allLanes: boolean | undefined): Promise<EmptyFigures> {
  const [ready, otherLanes, awaitingTriage, awaitingVerification] = await Promise.all([
    countReady(ctx.db, ctx, now, laneOf(ctx, allLanes)),
    allLanes ? 0 : countReady(ctx.db, ctx, now, othersLanes(i, me(ctx))),
    countAwaitingTriage(ctx),
    pendingVerifications(ctx),
  ]);
  return { ready, otherLanes, awaitingTriage, awaitingVerification, nextLapse: null };
}

export function emptyReply(figures: EmptyFigures, now: Date) {
  const { ready, otherLanes, awaitingTriage, awaitingVerification } = figures;
  const triage = awaitingTriage > 0 ? ` ${awaitingTriage} issue(s) from outside the team await a person's triage; no agent is handed them or their text.` : "";
  const verification =
    awaitingVerification.length > 0
      ? ` Work waits on finishes CI has not verified yet (${awaitingVerification.join(", ")}): their dependents start once CI passes them.`
      : "";
  const retryAfter = retryAfterSeconds(figures, now);
  return {
    claimed: false as const,
    ready,
    otherLanes,
    awaitingTriage,
    ...(awaitingVerification.length > 0 ? { awaitingVerification } : {}),
    retryAfter,
    message:
      (otherLanes > 0
        ? `Nothing claimable in your lane; ${otherLanes} ready issue(s) sit in other people's lanes. Call again with allLanes:true to take one.`
        : ready > 0
          ? "Ready work exists but was claimed concurrently; call next_issue again."
          : `Nothing is claimable right now: everything is held, blocked, or done. Poll again in ${retryAfter}s.`) + triage + verification,
  };
}

/** Moves any issue whose deadline state time has changed before dispatching, so the order is exact. */
export async function applyDueSla(ctx: Ctx, now: Date) {
  const rows = await query<{ found: boolean }>(
    ctx.db,
    sql`select exists(select 1 from issues i where ${scopeOf(ctx)} and i.sla_next_at <= ${now.toISOString()}::timestamptz) as found`,
  );
  if (rows[0]?.found) await slaSweepOrg(ctx, ctx.principal.orgId);
}

/** Time moved an issue across an SLA threshold since the last sweep: the dispatch reruns after one. */
export class SlaThresholdPassed extends Error {}

/** Has time moved an issue in scope across an SLA threshold that the sweep has not applied yet? */
export async function slaThresholdPassed(scope: WriteScope): Promise<boolean> {
  const rows = await query<{ found: boolean }>(
    scope.tx,
    sql`select exists(select 1 from issues i where ${scopeOf(scope.ctx)} and i.sla_next_at <= ${scope.now.toISOString()}::timestamptz) as found`,
  );
  return Boolean(rows[0]?.found);
}

/**
 * Runs a dispatch transaction so it orders by current levels. `run` sends the SLA check
 * first, with its own reads; when a threshold has passed it throws SlaThresholdPassed, the
 * transaction rolls back, the sweep re-ranks, and the dispatch reruns (checking again only
 * a few times, so a stream of thresholds cannot starve it).
 */
export async function dispatchWithCurrentSla<T>(ctx: Ctx, run: (scope: WriteScope, checkSla: boolean) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await inTransaction(ctx, (scope) => run(scope, attempt < 3));
    } catch (error) {
      if (!(error instanceof SlaThresholdPassed)) throw error;
      await slaSweepOrg(ctx, ctx.principal.orgId);
    }
  }
}
