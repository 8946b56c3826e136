import { sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { notFound } from "../errors.ts";
import { projectFor } from "../issues/inputs.ts";
import { actorOf } from "../orgs/access.ts";
import { inScope } from "../orgs/scope.ts";
import { billingEnabled } from "../usage/meter.ts";
import { falseDoneRate } from "./false-done.ts";

/**
 * Analytics over a period (decision 071), one core for analytics_overview, analytics_issues and
 * the Dash's Analytics page. The period ends now and spans `days` (1 to 90, default 7). Counted
 * from the activity log's creates and closes (an org's `created` entries and status changes into
 * done or canceled, by time), joined to their work issues; containers are never counted. The log
 * is read by org (activity_org_idx); an index on (org, time) for these entries is still to come
 * (decision 071). Scope: a scoped member's projects (decision 042); a member's project-bound key
 * its project; owners and admins the org, or the `project` they pass. Money (the ledger's charges
 * over the period) is owners' and admins' only, and only with billing on. Reads are free.
 */
export const ANALYTICS_MAX_DAYS = 90;

/** Lengths checked by refine: tools/list publishes a bare string (its budget; decision 071). */
export const shortString = (max: number) => z.string().trim().refine((v) => v.length >= 1 && v.length <= max, { error: `must be 1 to ${max} characters` });

export const analyticsPeriod = {
  days: z.number().int().min(1).max(ANALYTICS_MAX_DAYS).default(7),
  project: shortString(10).optional(),
};
export const analyticsOverviewInput = z.object(analyticsPeriod);

/** What each figure means, with its unit: the page and the tool say the same. */
export const ANALYTICS_DEFINITIONS = {
  created: "work issues filed in the period (count)",
  finished: "moves of a work issue into done in the period (count)",
  canceled: "moves of a work issue into canceled in the period (count)",
  throughput: "finished per day, days counted back from now (count per day)",
  cycle: "first claim to done, over the period's finishes: p50 and p90 (ms)",
  review: "last entry into review to its acceptance (done), over the period's accepted reviews: p50 and p90 (ms)",
  lead: "filed to done, over the period's finishes: p50 and p90 (ms)",
  reclaims: "lapsed leases taken back by the server in the period (count)",
  falseDone: "finishes CI failed, or reopened within 7 days, over finishes (0 to 1)",
  cost: "charges in the ledger over the period, by changeType, runtime and person (who the charged key or session acts for), owners and admins with billing on (micro-credits; 1,000,000 = $1)",
} as const;

export type FlowRow = {
  /** The whole period, one changeType's issues ("none": filed without one), or one runtime's moves (who filed, finished or canceled). */
  by: "all" | "changeType" | "runtime";
  key: string | null;
  created: number;
  finished: number;
  canceled: number;
  cycleP50Ms: number | null;
  cycleP90Ms: number | null;
  leadP50Ms: number | null;
  leadP90Ms: number | null;
  /** Accepted reviews among the finishes, and their time in review (last entry into review to done). */
  reviewed: number;
  reviewP50Ms: number | null;
  reviewP90Ms: number | null;
};
/** `person`: the email of the person a charged key or session acts for (null: no person, the system). */
export type CostRow = { by: "changeType" | "runtime" | "person"; key: string | null; microCredits: number };

export interface Period {
  orgId: string;
  from: Date;
  to: Date;
  days: number;
  /** The project counted, or null for every project the caller reaches. */
  project: { id: string; prefix: string } | null;
  role: "owner" | "admin" | "member";
}

/** The period and project a caller may read: a member's project-bound key is held to its project. */
export async function periodOf(ctx: Ctx, input: { days: number; project?: string }): Promise<Period> {
  const actor = await actorOf(ctx);
  const to = ctx.clock.now();
  const from = new Date(to.getTime() - input.days * 86_400_000);
  const keyProject = actor.role === "member" ? ctx.principal.projectId : null;
  let project = input.project || keyProject ? await projectFor(ctx.db, ctx, input.project) : null;
  if (project && keyProject && project.id !== keyProject) throw notFound(`project ${input.project}`, "Your key reads its own project's analytics; leave project out.");
  if (!input.project && !keyProject) project = null;
  return { orgId: ctx.principal.orgId, from, to, days: input.days, project, role: actor.role };
}

/** The issues a figure may count: the caller's scope, the period's project, work only. */
export function issueFilter(ctx: Ctx, period: Period): SQL {
  const project = period.project ? sql`i.project_id = ${period.project.id}` : sql`true`;
  return sql`i.work and ${inScope(ctx.principal, sql`i.project_id`)} and ${project}`;
}

const at = (d: Date) => sql`${d.toISOString()}::timestamptz`;

/**
 * The period's creates and closes, one row per event.
 * `what`: created, done or canceled; a close is a status change into one from another status.
 * `reviewed_from`: for a done out of review (an accepted review), when it last entered review: the
 * latest move into review logged before the done, else the issue's `review_since` (an imported
 * review has no such move in the log).
 */
export function flowEvents(ctx: Ctx, period: Period): SQL {
  return sql`select a.id, a.issue_id, a.created_at as at, a.runtime, floor(extract(epoch from (a.created_at - ${at(period.from)})) / 86400)::int as day,
                    case when a.kind = 'created' then 'created' else a.facts->>'to' end as what,
                    i.identifier, i.title_enc, i.status, i.change_type, i.created_at as filed, i.first_claimed_at as claimed,
                    case when a.facts->>'to' = 'done' and a.facts->>'from' = 'review' then coalesce(
                      (select max(r.created_at) from activity r
                        where r.issue_id = a.issue_id and r.facts->>'to' = 'review' and r.facts->>'from' is distinct from 'review' and r.created_at <= a.created_at),
                      case when i.review_since <= a.created_at then i.review_since end) end as reviewed_from
             from activity a join issues i on i.id = a.issue_id
             where a.org_id = ${period.orgId} and (a.kind = 'created' or a.facts->>'to' in ('done', 'canceled'))
               and a.created_at >= ${at(period.from)} and a.created_at < ${at(period.to)}
               and (a.kind = 'created' or a.facts->>'from' is distinct from a.facts->>'to')
               and ${issueFilter(ctx, period)}`;
}

interface FlowSql {
  by: "all" | "changeType" | "runtime" | "day";
  key: string | null;
  day: number | null;
  created: number;
  finished: number;
  canceled: number;
  cycle50: number | null;
  cycle90: number | null;
  lead50: number | null;
  lead90: number | null;
  reviewed: number;
  review50: number | null;
  review90: number | null;
}

const pct = (p: number, span: SQL) =>
  sql`(percentile_cont(${sql.raw(String(p))}) within group (order by extract(epoch from ${span})) filter (where f.what = 'done') * 1000)::float8`;
const reviewPct = (p: number) =>
  sql`(percentile_cont(${sql.raw(String(p))}) within group (order by extract(epoch from f.at - f.reviewed_from)) filter (where f.reviewed_from is not null) * 1000)::float8`;

export async function analyticsOverview(ctx: Ctx, raw: z.input<typeof analyticsOverviewInput>) {
  const input = analyticsOverviewInput.parse(raw);
  const period = await periodOf(ctx, input);
  const dayOf = sql`f.day`;
  const flowing = query<FlowSql>(
      ctx.db,
      sql`with f as (${flowEvents(ctx, period)})
          select case when grouping(f.change_type) = 0 then 'changeType' when grouping(f.runtime) = 0 then 'runtime'
                      when grouping(${dayOf}) = 0 then 'day' else 'all' end as by,
                 case when grouping(f.change_type) = 0 then coalesce(f.change_type, 'none') when grouping(f.runtime) = 0 then f.runtime end as key,
                 case when grouping(${dayOf}) = 0 then ${dayOf} end as day,
                 count(*) filter (where f.what = 'created')::int as created,
                 count(*) filter (where f.what = 'done')::int as finished,
                 count(*) filter (where f.what = 'canceled')::int as canceled,
                 ${pct(0.5, sql`f.at - f.claimed`)} as cycle50, ${pct(0.9, sql`f.at - f.claimed`)} as cycle90,
                 ${pct(0.5, sql`f.at - f.filed`)} as lead50, ${pct(0.9, sql`f.at - f.filed`)} as lead90,
                 count(f.reviewed_from)::int as reviewed, ${reviewPct(0.5)} as review50, ${reviewPct(0.9)} as review90
          from f group by grouping sets ((), (f.change_type), (f.runtime), (${dayOf}))`,
  );
  const [flow, reclaims, falseDone, cost] = await Promise.all([
    flowing,
    query<{ n: number }>(
      ctx.db,
      sql`select count(*)::int as n from activity a join issues i on i.id = a.issue_id
          where a.org_id = ${period.orgId} and a.kind = 'reclaimed' and a.created_at >= ${at(period.from)} and a.created_at < ${at(period.to)}
            and ${issueFilter(ctx, period)}`,
    ),
    // The false-done rate's own home, over this period and project.
    falseDoneRate({ ...ctx, principal: { ...ctx.principal, projectId: period.project?.id ?? null } }, period.to, period.days),
    costOf(ctx, period, flowing.then((rows) => rows.find((r) => r.by === "all")?.finished ?? 0)),
  ]);
  const ms = (v: number | null) => (v == null ? null : Math.round(Number(v)));
  const toRow = (r: FlowSql | undefined, by: FlowRow["by"], key: string | null): FlowRow => ({
    by,
    key,
    created: r?.created ?? 0,
    finished: r?.finished ?? 0,
    canceled: r?.canceled ?? 0,
    cycleP50Ms: ms(r?.cycle50 ?? null),
    cycleP90Ms: ms(r?.cycle90 ?? null),
    leadP50Ms: ms(r?.lead50 ?? null),
    leadP90Ms: ms(r?.lead90 ?? null),
    reviewed: r?.reviewed ?? 0,
    reviewP50Ms: ms(r?.review50 ?? null),
    reviewP90Ms: ms(r?.review90 ?? null),
  });
  const all = toRow(flow.find((r) => r.by === "all"), "all", null);
  const finishedOn = new Map(flow.filter((r) => r.by === "day").map((r) => [Number(r.day), r.finished]));
  const split = flow
    .filter((r) => r.by === "changeType" || r.by === "runtime")
    .sort((a, b) => a.by.localeCompare(b.by) || b.finished - a.finished || b.created - a.created || String(a.key).localeCompare(String(b.key)))
    .map((r) => toRow(r, r.by as FlowRow["by"], r.key));
  const whole = falseDone.rows.find((r) => r.by === "all")!;
  return {
    from: period.from.toISOString(),
    to: period.to.toISOString(),
    days: period.days,
    project: period.project?.prefix ?? null,
    totals: { created: all.created, finished: all.finished, canceled: all.canceled, reclaims: reclaims[0]?.n ?? 0 },
    /** Finishes on each day of the period (24 hours from `from`), oldest first. */
    perDay: Array.from({ length: period.days }, (_, day) => finishedOn.get(day) ?? 0),
    rows: [all, ...split],
    falseDone: { finishes: whole.finishes, falseDone: whole.falseDone, rate: whole.rate },
    cost,
    definitions: ANALYTICS_DEFINITIONS,
  };
}

/**
 * The ledger over the period, split by the charged issue's changeType ("none": an issue without
 * one; null: no issue), by runtime and by person (the email of whom the charged key or session
 * acts for; null: a charge with none).
 */
async function costOf(ctx: Ctx, period: Period, finished: Promise<number>) {
  if (!billingEnabled(ctx.config) || period.role === "member") return null;
  const project = period.project ? sql`i.project_id = ${period.project.id}` : sql`true`;
  const rows = await query<{ by: CostRow["by"] | "all"; key: string | null; micro: string }>(
    ctx.db,
    sql`with c as (
          select c.runtime, c.user_id, c.micro_credits, case when c.issue_id is not null then coalesce(i.change_type, 'none') end as change_type
          from billing_charges c left join issues i on i.id = c.issue_id
          where c.org_id = ${period.orgId} and c.created_at >= ${at(period.from)} and c.created_at < ${at(period.to)} and ${project}
        ), g as (
          select case when grouping(c.change_type) = 0 then 'changeType' when grouping(c.runtime) = 0 then 'runtime'
                      when grouping(c.user_id) = 0 then 'person' else 'all' end as by,
                 case when grouping(c.change_type) = 0 then c.change_type when grouping(c.runtime) = 0 then c.runtime when grouping(c.user_id) = 0 then c.user_id end as key,
                 sum(c.micro_credits) as micro
          from c group by grouping sets ((), (c.change_type), (c.runtime), (c.user_id))
        )
        select g.by, case when g.by = 'person' then u.email else g.key end as key, g.micro::text as micro
        from g left join "user" u on g.by = 'person' and u.id = g.key`,
  );
  const total = Number(rows.find((r) => r.by === "all")?.micro ?? 0);
  const done = await finished;
  return {
    microCredits: total,
    perFinishedMicroCredits: done > 0 ? Math.round(total / done) : null,
    rows: rows
      .flatMap((r): CostRow[] => (r.by === "all" ? [] : [{ by: r.by, key: r.key, microCredits: Number(r.micro) }]))
      .sort((a, b) => a.by.localeCompare(b.by) || b.microCredits - a.microCredits),
  };
}
