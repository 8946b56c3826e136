import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { countReady, scopeOf } from "./dispatch.ts";

/**
 * The drain forecast (queue_status's `forecast`, the Fleet page's ETA): the fleet's measured
 * pace, and at that pace when the ready queue, the whole open backlog and each open container
 * would be done. A backlog cannot drain faster than its longest chain of open blockers is
 * worked one after another, so each ETA is the larger of "open issues at the pace" and "chain
 * length × median claim-to-done".
 *
 * The pace is finishes (a lease ended by `done` or a handoff to review) over the window's active
 * span: from the earliest claim among those finishes (or the window's start) to now, so a fleet
 * that started an hour ago is not measured as idle for the other 23.
 */
const HOUR_MS = 3_600_000;
const WINDOW_HOURS = 24;
/** Chains longer than this are cut: the forecast is already bounded by them. */
const CHAIN_CAP = 200;

interface PaceRow {
  finished: number;
  first_claim: string | null;
  median_ms: number | null;
}

export async function queueForecast(ctx: Ctx, now = ctx.clock.now()) {
  const windowStart = new Date(now.getTime() - WINDOW_HOURS * HOUR_MS);
  const scope = scopeOf(ctx);
  const [[paceRow], [openRow], chains, members, ready] = await Promise.all([
    query<PaceRow>(
      ctx.db,
      sql`select count(*)::int as finished, min(l.claimed_at)::text as first_claim,
                 (extract(epoch from percentile_cont(0.5) within group (order by l.ended_at - l.claimed_at)) * 1000)::float8 as median_ms
          from leases l join issues i on i.id = l.issue_id
          where l.org_id = ${ctx.principal.orgId} and ${scope} and l.end_reason = 'finished' and l.ended_at > ${windowStart.toISOString()}::timestamptz`,
    ),
    query<{ n: number }>(ctx.db, sql`select count(*)::int as n from issues i where ${scope} and i.work and i.status not in ('done', 'canceled')`),
    // For each open issue, the longest chain of open blockers that ends at it (identifiers, first blocker first).
    query<{ id: string; path: string[]; depth: number }>(
      ctx.db,
      sql`with recursive open_issue as (
            select i.id, i.identifier from issues i where ${scope} and i.work and i.status not in ('done', 'canceled')
          ), edge as (
            select r.source_id, r.target_id from relations r
            join open_issue s on s.id = r.source_id join open_issue t on t.id = r.target_id
            where r.type = 'blocks'
          ), chain(id, path, depth) as (
            select o.id, array[o.identifier], 1 from open_issue o
            where not exists (select 1 from edge e where e.target_id = o.id)
            union all
            select t.id, c.path || t.identifier, c.depth + 1
            from chain c join edge e on e.source_id = c.id join open_issue t on t.id = e.target_id
            where c.depth < ${CHAIN_CAP} and not t.identifier = any(c.path)
          )
          select distinct on (id) id, path, depth from chain order by id, depth desc`,
    ),
    // Each open container's open work issues, through nested containers.
    query<{ container: string; id: string }>(
      ctx.db,
      sql`with recursive tree(container, id) as (
            select i.identifier, k.id from issues i join issues k on k.parent_id = i.id
            where ${scope} and not i.work and i.status not in ('done', 'canceled')
            union all
            select t.container, k.id from tree t join issues k on k.parent_id = t.id
          )
          select t.container, k.id from tree t join issues k on k.id = t.id
          where k.work and k.status not in ('done', 'canceled')`,
    ),
    countReady(ctx.db, ctx, now, sql`true`),
  ]);

  const finished = Number(paceRow?.finished ?? 0);
  const spanStart = paceRow?.first_claim ? Math.max(windowStart.getTime(), new Date(paceRow.first_claim).getTime()) : now.getTime();
  const spanHours = (now.getTime() - spanStart) / HOUR_MS;
  const perHour = finished > 0 && spanHours > 0 ? finished / spanHours : null;
  const medianClaimToDoneMs = paceRow?.median_ms != null ? Math.round(Number(paceRow.median_ms)) : null;

  const depthOf = new Map(chains.map((c) => [c.id, Number(c.depth)]));
  const critical = chains.reduce<(typeof chains)[number] | null>((best, c) => (!best || Number(c.depth) > Number(best.depth) ? c : best), null);
  const criticalChain = critical && Number(critical.depth) > 1 ? critical.path : [];

  /** Hours until `open` issues whose longest blocker chain is `chain` long are done; null without a pace. */
  const hours = (open: number, chain: number) => {
    if (open === 0) return 0;
    if (perHour === null) return null;
    return Math.max(open / perHour, (chain * (medianClaimToDoneMs ?? 0)) / HOUR_MS);
  };
  const eta = (h: number | null) => (h === null ? null : new Date(now.getTime() + h * HOUR_MS).toISOString());

  const byContainer = new Map<string, { open: number; chain: number }>();
  for (const m of members) {
    const entry = byContainer.get(m.container) ?? { open: 0, chain: 0 };
    entry.open += 1;
    entry.chain = Math.max(entry.chain, depthOf.get(m.id) ?? 1);
    byContainer.set(m.container, entry);
  }
  const open = Number(openRow?.n ?? 0);
  const readyHours = hours(ready, 1);
  const openHours = hours(open, criticalChain.length);
  return {
    window: `${WINDOW_HOURS}h`,
    finished,
    perHour: perHour === null ? null : Math.round(perHour * 100) / 100,
    medianClaimToDoneMs,
    ready,
    open,
    readyHours,
    readyEta: eta(readyHours),
    openHours,
    openEta: eta(openHours),
    criticalChain,
    containers: [...byContainer].map(([identifier, c]) => {
      const h = hours(c.open, c.chain);
      return { identifier, open: c.open, hours: h, eta: eta(h) };
    }),
    reason: perHour === null ? `no finish in the last ${WINDOW_HOURS}h to measure a pace from` : null,
  };
}
export type QueueForecast = Awaited<ReturnType<typeof queueForecast>>;
