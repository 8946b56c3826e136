import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { CHART_RANGES, DEPTH_STATUSES, type ChartRange } from "../../constants/chart-ranges.ts";
import { inScope } from "../orgs/scope.ts";

/**
 * The Fleet page's charts over the last day or week (charts-ranges.ts), buckets aligned to clock
 * hours, oldest first (decision 027):
 * - finished issues and the median first-claim-to-done time of each bucket's finishes, from the
 *   leases a finish ended (done, or a handoff to review; leases_org_finished_idx);
 * - reclaims of lapsed leases, from the activity log (activity_org_reclaimed_idx);
 * - stale writes refused and the queue depth by status, from fleet_hours (../issues/stale-refusals.ts, charts-record.ts), one
 *   row per project and hour: the bucket's refusals and its last sample, summed over the projects.
 * A scoped member (decision 042) counts only their projects' rows in each.
 */
const HOUR_MS = 3_600_000;

export interface ChartBucket {
  /** Start of the bucket (ISO). */
  start: string;
  finished: number;
  /** Median first claim to finish of the bucket's finishes; null: none finished. */
  medianMs: number | null;
  reclaimed: number;
  staleRefused: number;
  /** Queue depth at the bucket's last sample; null: no sample in it. */
  depth: Record<(typeof DEPTH_STATUSES)[number], number> | null;
}

interface BucketRow {
  bucket: number;
  finished: number;
  median_ms: number | null;
  reclaimed: number;
  stale: number;
  depth: Record<string, number> | null;
}

export async function fleetCharts(ctx: Ctx, now: Date, range: ChartRange) {
  const { buckets: n, hours } = CHART_RANGES[range];
  const size = hours * HOUR_MS;
  const end = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS + HOUR_MS;
  const since = new Date(end - n * size).toISOString();
  const orgId = ctx.principal.orgId;
  // A scoped member's charts count their projects' work; org-wide sample rows (no project) only an unscoped viewer's.
  const within = inScope(ctx.principal, sql`i.project_id`);
  const depthSums = sql.join(
    DEPTH_STATUSES.map((s) => sql`${s}::text, coalesce(sum((h.depth->>${s})::int) filter (where h.hour = l.hour), 0)`),
    sql`, `,
  );
  const endAt = sql`${new Date(end).toISOString()}::timestamptz`;
  // Bucket index of a time: 0 the oldest, n - 1 the current.
  const bucketOf = (column: ReturnType<typeof sql>) =>
    sql`(${n} - ceil(extract(epoch from (${endAt} - ${column})) * 1000 / ${size}))::int`;
  const rows = await query<BucketRow>(
    ctx.db,
    sql`with finished as (
          select ${bucketOf(sql`l.ended_at`)} as bucket, count(*)::int as finished,
                 (extract(epoch from percentile_cont(0.5) within group (order by l.ended_at - i.first_claimed_at)) * 1000)::float8 as median_ms
          from leases l join issues i on i.id = l.issue_id
          where l.org_id = ${orgId} and ${within} and l.end_reason = 'finished' and l.ended_at >= ${since}::timestamptz
          group by 1
        ), reclaimed as (
          select ${bucketOf(sql`created_at`)} as bucket, count(*)::int as reclaimed
          from activity a where a.org_id = ${orgId} and a.kind = 'reclaimed' and a.created_at >= ${since}::timestamptz
            and ${inScope(ctx.principal, sql`(select ai.project_id from issues ai where ai.id = a.issue_id)`)}
          group by 1
        ), sampled as (
          select ${bucketOf(sql`hour`)} as bucket, hour, stale_refused, depth
          from fleet_hours where org_id = ${orgId} and hour >= ${since}::timestamptz and ${inScope(ctx.principal, sql`project_id`)}
        ), last_sample as (
          select bucket, max(hour) as hour from sampled where depth is not null group by bucket
        ), hours as (
          select h.bucket, sum(h.stale_refused)::int as stale,
                 case when l.hour is null then null else jsonb_build_object(${depthSums}) end as depth
          from sampled h left join last_sample l using (bucket)
          group by h.bucket, l.hour
        )
        select b.bucket, coalesce(f.finished, 0) as finished, f.median_ms, coalesce(r.reclaimed, 0) as reclaimed,
               coalesce(h.stale, 0) as stale, h.depth
        from (select f.bucket from finished f union select r.bucket from reclaimed r union select h.bucket from hours h) b
        left join finished f using (bucket) left join reclaimed r using (bucket) left join hours h using (bucket)`,
  );
  const byBucket = new Map(rows.map((r) => [Number(r.bucket), r]));
  const buckets: ChartBucket[] = Array.from({ length: n }, (_, i) => {
    const r = byBucket.get(i);
    return {
      start: new Date(end - (n - i) * size).toISOString(),
      finished: Number(r?.finished ?? 0),
      medianMs: r?.median_ms == null ? null : Math.round(Number(r.median_ms)),
      reclaimed: Number(r?.reclaimed ?? 0),
      staleRefused: Number(r?.stale ?? 0),
      depth: r?.depth ? (Object.fromEntries(DEPTH_STATUSES.map((s) => [s, Number(r.depth![s] ?? 0)])) as ChartBucket["depth"]) : null,
    };
  });
  const [median] = await query<{ ms: number | null }>(
    ctx.db,
    sql`select (extract(epoch from percentile_cont(0.5) within group (order by l.ended_at - i.first_claimed_at)) * 1000)::float8 as ms
        from leases l join issues i on i.id = l.issue_id
        where l.org_id = ${orgId} and ${within} and l.end_reason = 'finished' and l.ended_at >= ${since}::timestamptz`,
  );
  const sum = (pick: (b: ChartBucket) => number) => buckets.reduce((a, b) => a + pick(b), 0);
  return {
    range,
    bucketHours: hours,
    buckets,
    totals: {
      finished: sum((b) => b.finished),
      medianClaimToDoneMs: median?.ms == null ? null : Math.round(Number(median.ms)),
      reclaimed: sum((b) => b.reclaimed),
      staleRefused: sum((b) => b.staleRefused),
    },
  };
}
export type FleetCharts = Awaited<ReturnType<typeof fleetCharts>>;
