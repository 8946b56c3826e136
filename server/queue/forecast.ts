import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { countReady, scopeOf } from "./dispatch.ts";
import { inScope } from "../orgs/scope.ts";
import { isOpen } from "../../db/schema/dispatch.ts";

/**
 * The drain forecast (queue_status's `forecast`, the Fleet page's ETA): the fleet's measured
 * pace, and at that pace when the ready queue, the whole open backlog and each open container
 * would be done. A backlog cannot drain faster than its longest chain of open blockers is
 * worked one after another, so each ETA is the larger of "open issues at the pace" and "chain
 * length × median claim-to-done".
 *
 * The pace is finishes (a lease ended by `done` or a handoff to review) over the window's active
 * span: from the earliest claim among those finishes (or the window's start) to now, so a fleet
 * that started an hour ago is not measured as idle for the other 23. A pace is only given from
 * MIN_FINISHES over MIN_SPAN_MINUTES: two finishes in half a minute made "194 an hour, drained
 * in 0 min", which no one should plan by.
 */
const HOUR_MS = 3_600_000;
const WINDOW_HOURS = 24;
const MIN_FINISHES = 5;
const MIN_SPAN_MINUTES = 10;
/** Chains longer than this are cut: the forecast is already bounded by them. */
const CHAIN_CAP = 200;

interface PaceRow {
  finished: number;
  first_claim: string | null;
  median_ms: number | null;
}

/**
 * The fleet's finishes in the window: how many, the earliest claim among them, the median
 * claim-to-done. A project key's are its project's: each lease's issue looked up by primary key, in
 * a scalar subquery the planner never turns into a join. As a join, a new org that the statistics
 * did not know yet (estimated at one row) was planned as a scan of all its issues for every lease,
 * quadratic in the finishes (0.5 s a call three minutes into the soak, 5 s at seven).
 */
export function paceStatement(orgId: string, projectId: string | null, windowStart: Date, projectIds: string[] | null = null) {
  return sql`select count(*)::int as finished, min(l.claimed_at)::text as first_claim,
                    (extract(epoch from percentile_cont(0.5) within group (order by l.ended_at - l.claimed_at)) * 1000)::float8 as median_ms
             from leases l
             where l.org_id = ${orgId} and l.end_reason = 'finished' and l.ended_at > ${windowStart.toISOString()}::timestamptz
             ${projectId ? sql`and (select i.project_id from issues i where i.id = l.issue_id) = ${projectId}` : sql``}
             ${projectIds ? sql`and ${inScope({ projectIds }, sql`(select i.project_id from issues i where i.id = l.issue_id)`)}` : sql``}`;
}

export async function queueForecast(ctx: Ctx, now = ctx.clock.now()) {
  const windowStart = new Date(now.getTime() - WINDOW_HOURS * HOUR_MS);
  const scope = scopeOf(ctx);
  const [[paceRow], openWork, blocks, members, ready] = await Promise.all([
    query<PaceRow>(ctx.db, paceStatement(ctx.principal.orgId, ctx.principal.projectId, windowStart, ctx.principal.projectIds)),
    query<{ id: string; identifier: string }>(
      ctx.db,
      sql`select i.id, i.identifier from issues i where ${scope} and i.work and ${isOpen(sql`i.status`)} order by i.id`,
    ),
    // What blocks an open work issue; the blockers that are not open themselves are dropped below.
    query<{ source_id: string; target_id: string }>(
      ctx.db,
      sql`select r.source_id, r.target_id from relations r join issues i on i.id = r.target_id
          where r.type = 'blocks' and ${scope} and i.work and ${isOpen(sql`i.status`)}`,
    ),
    // Each open container's open work issues, through nested containers.
    query<{ container: string; id: string }>(
      ctx.db,
      sql`with recursive tree(container, id) as (
            select i.identifier, k.id from issues i join issues k on k.parent_id = i.id
            where ${scope} and not i.work and ${isOpen(sql`i.status`)}
            union all
            select t.container, k.id from tree t join issues k on k.parent_id = t.id
          )
          select t.container, k.id from tree t join issues k on k.id = t.id
          where k.work and ${isOpen(sql`k.status`)}`,
    ),
    countReady(ctx.db, ctx, now, sql`true`),
  ]);

  const finished = Number(paceRow?.finished ?? 0);
  const spanStart = paceRow?.first_claim ? Math.max(windowStart.getTime(), new Date(paceRow.first_claim).getTime()) : now.getTime();
  const spanHours = (now.getTime() - spanStart) / HOUR_MS;
  const measured = finished >= MIN_FINISHES && spanHours * 60 >= MIN_SPAN_MINUTES;
  const perHour = measured ? finished / spanHours : null;
  const medianClaimToDoneMs = paceRow?.median_ms != null ? Math.round(Number(paceRow.median_ms)) : null;

  const { depthOf, criticalChain } = longestBlockerChains(openWork, blocks);

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
  const open = openWork.length;
  const readyHours = hours(ready, 1);
  const openHours = hours(open, criticalChain.length);
  return {
    window: `${WINDOW_HOURS}h`,
    finished,
    perHour: perHour === null ? null : roundRate(perHour),
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
    reason:
      finished === 0
        ? `no finish in the last ${WINDOW_HOURS}h to measure a pace from`
        : perHour === null
          ? `not enough history for a pace yet: ${finished} finished over ${Math.round(spanHours * 60)} min (a pace needs ${MIN_FINISHES} over ${MIN_SPAN_MINUTES} min)`
          : null,
  };
}

/** Whole numbers from 10 an hour up, one decimal below: what a rate measured over minutes can claim. */
const roundRate = (perHour: number) => (perHour >= 10 ? Math.round(perHour) : Math.round(perHour * 10) / 10);
export type QueueForecast = Awaited<ReturnType<typeof queueForecast>>;

/**
 * For each open issue the length of the longest chain of open blockers that ends at it (itself
 * counted), and the longest chain of all, first blocker first. In memory, in one pass over the
 * edges: a recursive query enumerating every chain took about a second for 2,000 issues on the
 * Fleet page (bench/fleet-render.ts). A cycle (which add_relation refuses) is cut where it closes.
 */
export function longestBlockerChains(open: { id: string; identifier: string }[], blocks: { source_id: string; target_id: string }[]) {
  const identifierOf = new Map(open.map((o) => [o.id, o.identifier]));
  const blockersOf = new Map<string, string[]>();
  for (const { source_id, target_id } of blocks) {
    if (!identifierOf.has(source_id) || source_id === target_id) continue;
    const blockers = blockersOf.get(target_id);
    if (blockers) blockers.push(source_id);
    else blockersOf.set(target_id, [source_id]);
  }
  const depthOf = new Map<string, number>();
  const via = new Map<string, string>();
  const onPath = new Set<string>();
  // Depth-first with an explicit stack, so a hostile chain thousands long cannot overflow the call stack.
  const depth = (start: string): number => {
    if (!depthOf.has(start)) {
      const stack = [{ id: start, next: 0, best: 0 }];
      onPath.add(start);
      while (stack.length > 0) {
        const top = stack.at(-1)!;
        const blockers = blockersOf.get(top.id) ?? [];
        if (top.next < blockers.length) {
          const blocker = blockers[top.next++]!;
          const known = depthOf.get(blocker);
          if (known !== undefined && known > top.best) {
            top.best = known;
            via.set(top.id, blocker);
          } else if (known === undefined && !onPath.has(blocker)) {
            onPath.add(blocker);
            stack.push({ id: blocker, next: 0, best: 0 });
          }
          continue;
        }
        stack.pop();
        onPath.delete(top.id);
        const mine = Math.min(top.best + 1, CHAIN_CAP);
        depthOf.set(top.id, mine);
        const below = stack.at(-1);
        if (below && mine > below.best) {
          below.best = mine;
          via.set(below.id, top.id);
        }
      }
    }
    return depthOf.get(start)!;
  };
  let deepest: string | null = null;
  for (const { id } of open) if (deepest === null || depth(id) > depth(deepest)) deepest = id;
  const criticalChain: string[] = [];
  for (let at = deepest; at !== null && depthOf.get(deepest!)! > 1 && criticalChain.length < CHAIN_CAP; at = via.get(at) ?? null) {
    criticalChain.unshift(identifierOf.get(at)!);
  }
  return { depthOf, criticalChain };
}
