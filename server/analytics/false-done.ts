import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { inScope } from "../orgs/scope.ts";
import { FALSE_DONE_RANGE_DAYS, REOPEN_WINDOW_DAYS } from "../../constants/false-done.ts";

/**
 * The false-done rate (issue 35), its one home. Over the range (the last 30 days, ending now:
 * long enough for most finishes' 7 days to have passed), each finish counts once, for the runtime
 * person and changeType of the claim it ended: a lease ended `finished` whose activity entry says `to: done`
 * (found by leases_org_finished_idx, then per issue; every done of work ends its holder's lease,
 * so only intake closing unheld work and containers' dones are left out).
 * A finish is false when, before the issue's next finish, CI failed it (`verification_failed`, by
 * a check or a person's hand, however late), or the issue went back from done to an open status
 * within 7 days of it (today only CI failing does that: terminal issues otherwise stay closed;
 * any later way of reopening done work counts the same). Rate = false finishes / finishes (0 to 1). Time to verified: from the finish to
 * its `verified` (passed) entry, over the finishes CI passed: median and 90th percentile, in ms.
 * A finish younger than 7 days may still turn false. Scoped as the Fleet is: a scoped member's
 * projects (decision 042), and a project-bound key's project.
 */
export { FALSE_DONE_RANGE_DAYS, REOPEN_WINDOW_DAYS };

// A type, not an interface: rows are plain records (queue_status's output types them so).
export type FalseDoneRow = {
  /** What the row is split by: every finish of the range, or one runtime's, one person's, one changeType's. */
  by: "all" | "runtime" | "person" | "changeType";
  /** The runtime, the person's user id or the changeType; null on the "all" row (and for a finish with none: the system's, an issue with no changeType). */
  key: string | null;
  /** The person's email (by person only). */
  email: string | null;
  finishes: number;
  falseDone: number;
  /** falseDone / finishes, rounded to 4 places; null with no finishes. */
  rate: number | null;
  medianToVerifiedMs: number | null;
  p90ToVerifiedMs: number | null;
};

export interface FalseDone {
  days: number;
  from: string;
  to: string;
  rows: FalseDoneRow[];
}

interface Row {
  by: FalseDoneRow["by"];
  key: string | null;
  email: string | null;
  finishes: number;
  false_done: number;
  median_ms: number | null;
  p90_ms: number | null;
}

export async function falseDoneRate(ctx: Ctx, now: Date, days: number = FALSE_DONE_RANGE_DAYS): Promise<FalseDone> {
  const since = new Date(now.getTime() - days * 86_400_000);
  const { orgId, projectId } = ctx.principal;
  const project = projectId ? sql`i.project_id = ${projectId}` : sql`true`;
  const from = sql`${since.toISOString()}::timestamptz`;
  const to = sql`${now.toISOString()}::timestamptz`;
  const rows = await query<Row>(
    ctx.db,
    sql`with finishes as (
          select l.issue_id, l.ended_at as at, l.runtime, l.user_id as actor_id, i.change_type,
                 lead(l.ended_at) over (partition by l.issue_id order by l.ended_at, l.id) as next_at
          from leases l join issues i on i.id = l.issue_id
          where l.org_id = ${orgId} and l.end_reason = 'finished' and l.ended_at >= ${from}
            and ${inScope(ctx.principal, sql`i.project_id`)} and ${project}
            and exists (select 1 from activity a where a.issue_id = l.issue_id and a.kind = 'finished'
                          and a.created_at = l.ended_at and a.facts->>'to' = 'done')
        ), judged as (
          select f.runtime, f.actor_id, f.change_type,
                 exists (select 1 from activity r where r.issue_id = f.issue_id
                           and r.facts->>'from' = 'done' and r.facts->>'to' not in ('done', 'canceled')
                           and r.created_at >= f.at and (f.next_at is null or r.created_at <= f.next_at)
                           and (r.kind = 'verification_failed'
                                or r.created_at <= f.at + interval '${sql.raw(String(REOPEN_WINDOW_DAYS))} days')) as false_done,
                 (select min(v.created_at) from activity v where v.issue_id = f.issue_id and v.kind = 'verified'
                    and v.created_at >= f.at and (f.next_at is null or v.created_at <= f.next_at)) - f.at as to_verified
          from finishes f where f.at <= ${to}
        ), summed as (
          select case when grouping(j.runtime) = 0 then 'runtime' when grouping(j.actor_id) = 0 then 'person'
                      when grouping(j.change_type) = 0 then 'changeType' else 'all' end as by,
                 case when grouping(j.runtime) = 0 then j.runtime when grouping(j.actor_id) = 0 then j.actor_id
                      when grouping(j.change_type) = 0 then j.change_type end as key,
                 count(*)::int as finishes,
                 count(*) filter (where j.false_done)::int as false_done,
                 (percentile_cont(0.5) within group (order by extract(epoch from j.to_verified)) * 1000)::float8 as median_ms,
                 (percentile_cont(0.9) within group (order by extract(epoch from j.to_verified)) * 1000)::float8 as p90_ms
          from judged j
          group by grouping sets ((), (j.runtime), (j.actor_id), (j.change_type))
        )
        select s.by, s.key, case when s.by = 'person' then u.email end as email, s.finishes, s.false_done, s.median_ms, s.p90_ms
        from summed s left join "user" u on s.by = 'person' and u.id = s.key
        order by case s.by when 'all' then 0 when 'runtime' then 1 when 'person' then 2 else 3 end, s.finishes desc, s.key nulls last`,
  );
  const ms = (v: number | null) => (v == null ? null : Math.round(Number(v)));
  const all = rows.some((r) => r.by === "all");
  return {
    days,
    from: since.toISOString(),
    to: now.toISOString(),
    rows: [
      // No finishes: the grouping sets still give the whole-range row, with zeros.
      ...(all ? [] : [{ by: "all" as const, key: null, email: null, finishes: 0, false_done: 0, median_ms: null, p90_ms: null }]),
      ...rows,
    ].map((r) => ({
      by: r.by,
      key: r.key,
      email: r.email ?? null,
      finishes: Number(r.finishes),
      falseDone: Number(r.false_done),
      rate: Number(r.finishes) > 0 ? Math.round((Number(r.false_done) / Number(r.finishes)) * 10_000) / 10_000 : null,
      medianToVerifiedMs: ms(r.median_ms),
      p90ToVerifiedMs: ms(r.p90_ms),
    })),
  };
}
