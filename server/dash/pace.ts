import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";

/**
 * The fleet's measured pace for the Fleet page: issues finished per hour over the last day
 * (24 hourly counts, oldest first), the week's total, the median time from an issue's first
 * claim to its finish (the drain forecast beside it is server/queue/forecast.ts). A finish is a
 * lease ended by `done` or a handoff to review (leases_org_finished_idx).
 */
const HOUR_MS = 3_600_000;

interface PaceRow {
  hour: number;
  finished: number;
  week: number;
  median_ms: number | null;
}

export async function fleetPace(ctx: Ctx, now: Date) {
  const dayAgo = new Date(now.getTime() - 24 * HOUR_MS);
  const weekAgo = new Date(now.getTime() - 7 * 24 * HOUR_MS);
  const rows = await query<PaceRow>(
    ctx.db,
    sql`with finished as (
          select l.ended_at, l.ended_at - i.first_claimed_at as took
          from leases l join issues i on i.id = l.issue_id
          where l.org_id = ${ctx.principal.orgId} and l.end_reason = 'finished' and l.ended_at > ${weekAgo.toISOString()}::timestamptz
        )
        select floor(extract(epoch from (${now.toISOString()}::timestamptz - ended_at)) / 3600)::int as hour,
               count(*)::int as finished,
               (select count(*)::int from finished) as week,
               (select (extract(epoch from percentile_cont(0.5) within group (order by took)) * 1000)::float8
                  from finished where ended_at > ${dayAgo.toISOString()}::timestamptz) as median_ms
        from finished where ended_at > ${dayAgo.toISOString()}::timestamptz
        group by 1`,
  );
  const perHour = Array.from({ length: 24 }, () => 0);
  for (const r of rows) {
    const hoursAgo = Math.min(23, Math.max(0, Number(r.hour)));
    perHour[23 - hoursAgo] += Number(r.finished);
  }
  const lastDay = perHour.reduce((a, b) => a + b, 0);
  return {
    perHour,
    lastDay,
    lastWeek: rows.length > 0 ? Number(rows[0]!.week) : await weekOnly(ctx, weekAgo),
    medianClaimToDoneMs: rows.length > 0 && rows[0]!.median_ms !== null ? Math.round(Number(rows[0]!.median_ms)) : null,
  };
}

/** The week's finishes when the last day had none (the main query groups the day's hours only). */
async function weekOnly(ctx: Ctx, weekAgo: Date): Promise<number> {
  const [row] = await query<{ n: number }>(
    ctx.db,
    sql`select count(*)::int as n from leases
        where org_id = ${ctx.principal.orgId} and end_reason = 'finished' and ended_at > ${weekAgo.toISOString()}::timestamptz`,
  );
  return Number(row?.n ?? 0);
}
export type FleetPace = Awaited<ReturnType<typeof fleetPace>>;
