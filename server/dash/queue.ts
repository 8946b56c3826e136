import { and, eq, gt, gte, inArray, isNotNull, isNull, lte, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { z } from "zod";
import { dispatchOrder } from "../../db/schema/dispatch.ts";
import { agentKeys, issues, leases, user } from "../../db/schema/index.ts";
import { openStatuses } from "../../constants/statuses.ts";
import type { Ctx } from "../context.ts";
import { endOfDayIn } from "../issues/levels.ts";
import { statusSchema } from "../issues/schemas.ts";
import { orgTimeZone } from "../issues/inputs.ts";
import type { IssueRow } from "../issues/types.ts";
import { isLeaseLive } from "../issues/fencing.ts";
import { slaView, statusNoteOf } from "../issues/views.ts";
import { applyDueSla } from "../queue/index.ts";
import { activeMembers } from "./people.ts";
import { rankReasons } from "./why.ts";
import { reachable } from "../orgs/scope.ts";

/**
 * The Dash's queue: every issue of the org in dispatch order, paged and filtered, with
 * its own and effective level side by side and why, and which await triage (outsiders'
 * issues no agent is handed yet). Filters come from the page URL.
 */
export const queueTabs = ["all", "backlog", "active"] as const;
export const queueDateFields = ["created", "updated", "due"] as const;
export const QUEUE_PAGE_SIZE = 50;

const calendarDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "a date looks like 2026-06-01")
  .refine((v) => !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) && new Date(`${v}T00:00:00Z`).toISOString().startsWith(v), "not a calendar date");

export const queuePageInput = z.object({
  tab: z.enum(queueTabs).default("all"),
  /** Empty: every open status. */
  status: z.array(statusSchema).max(6).default([]),
  runtime: z.string().trim().min(1).max(64).optional(),
  priority: z.array(z.coerce.number().int().min(0).max(4)).max(5).default([]),
  date: z.enum(queueDateFields).default("created"),
  from: calendarDate.optional(),
  to: calendarDate.optional(),
  /** Words of the title, or an identifier (RTSC-12) or its number. */
  q: z.string().trim().max(200).optional(),
  /** The lane: an assignee's email, or "none" for unassigned issues. */
  lane: z.string().trim().min(1).max(320).optional(),
  /** "pending": only outsiders' issues awaiting a person's triage. */
  triage: z.enum(["pending"]).optional(),
  page: z.coerce.number().int().min(1).max(100_000).default(1),
});
export type QueuePageInput = z.infer<typeof queuePageInput>;

/** Reads the filters from a URL's query string (repeated keys for lists; empty values ignored). */
export function queueInputFromSearch(params: URLSearchParams): unknown {
  const one = (key: string) => params.get(key)?.trim() || undefined;
  const many = (key: string) => params.getAll(key).map((v) => v.trim()).filter(Boolean);
  return {
    tab: one("tab"),
    status: many("status"),
    runtime: one("runtime"),
    priority: many("priority"),
    date: one("date"),
    from: one("from"),
    to: one("to"),
    q: one("q"),
    lane: one("lane"),
    triage: one("triage"),
    page: one("page"),
  };
}

/**
 * The pills beside an issue's status: claimed (a live lease), an unheld doing issue in words
 * (what its next claim does), and resumed when the live claim carries on work a previous
 * holder left unfinished (`resumed` from resumedIssueIds).
 */
export function workPills(row: IssueRow, now: Date, resumed: ReadonlySet<string>) {
  const held = isLeaseLive(row, now);
  return {
    claimed: held,
    unheld: statusNoteOf(row, held),
    resumed: held && resumed.has(row.id),
  };
}

/**
 * Of these issues, those whose live claim resumed unfinished work: the lease before it was
 * given back or expired. A claim after a finish (a reviewer's, after the handoff to review)
 * starts afresh, and so does a first claim.
 */
export async function resumedIssueIds(db: Db, orgId: string, rows: IssueRow[], now: Date): Promise<Set<string>> {
  const later = rows.filter((r) => isLeaseLive(r, now) && r.fence > 1);
  if (later.length === 0) return new Set();
  const found = await db
    .select({ issueId: leases.issueId })
    .from(leases)
    .where(
      and(
        eq(leases.orgId, orgId),
        inArray(leases.endReason, ["released", "expired"]),
        sql`(${leases.issueId}, ${leases.fence}) in (${sql.join(
          later.map((r) => sql`(${r.id}, ${r.fence - 1})`),
          sql`, `,
        )})`,
      ),
    );
  return new Set(found.map((f) => f.issueId));
}

/**
 * Titles are encrypted, so a title search decrypts the titles of the issues the other filters
 * leave and keeps the ids that match (an identifier or its number matches too).
 */
async function searchIds(ctx: Ctx, filters: SQL[], q: string): Promise<string[]> {
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  const rows = await ctx.db.select({ id: issues.id, identifier: issues.identifier, number: issues.number, titleEnc: issues.titleEnc }).from(issues).where(and(...filters));
  return rows
    .filter((r) => {
      if (words.length === 1 && (r.identifier.toLowerCase() === words[0] || String(r.number) === words[0])) return true;
      const title = (cipher.decrypt(r.titleEnc) ?? "").toLowerCase();
      return words.every((w) => title.includes(w) || r.identifier.toLowerCase() === w);
    })
    .map((r) => r.id);
}

const previousDay = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);

export async function queuePage(ctx: Ctx, raw: z.input<typeof queuePageInput>) {
  const input = queuePageInput.parse(raw);
  const { db } = ctx;
  const orgId = ctx.principal.orgId;
  const now = ctx.clock.now();
  // Like dispatch: deadlines whose threshold has passed re-rank first, so the order shown is exact.
  await applyDueSla(ctx, now);
  const filters: SQL[] = [reachable(ctx.principal, issues)];
  filters.push(inArray(issues.status, input.status.length > 0 ? input.status : [...openStatuses]));
  if (input.priority.length > 0) filters.push(inArray(issues.priority, input.priority));
  if (input.runtime) {
    filters.push(sql`exists (select 1 from leases l where l.issue_id = ${issues.id} and l.runtime = ${input.runtime})`);
  }
  if (input.from || input.to) {
    const column = { created: issues.createdAt, updated: issues.updatedAt, due: issues.dueAt }[input.date];
    const timeZone = await orgTimeZone(db, orgId);
    if (input.from) filters.push(gte(column, new Date(endOfDayIn(previousDay(input.from), timeZone).getTime() + 1)));
    if (input.to) filters.push(lte(column, endOfDayIn(input.to, timeZone)));
  }
  if (input.lane === "none") filters.push(isNull(issues.assigneeId));
  else if (input.lane) filters.push(sql`${issues.assigneeId} in (select id from "user" where lower(email) = ${input.lane.toLowerCase()})`);
  if (input.triage) filters.push(eq(issues.triage, input.triage));
  if (input.q) {
    const ids = await searchIds(ctx, filters, input.q);
    filters.push(ids.length > 0 ? inArray(issues.id, ids) : sql`false`);
  }
  const tabFilter =
    input.tab === "backlog" ? isNull(issues.firstClaimedAt) : input.tab === "active" ? isNotNull(issues.firstClaimedAt) : undefined;

  const [rows, tallies, runtimes, people] = await Promise.all([
    db
      .select({
        issue: issues,
        holderRuntime: leases.runtime,
        lane: user.email,
      })
      .from(issues)
      .leftJoin(leases, and(eq(leases.id, issues.leaseId), gt(leases.expiresAt, now)))
      .leftJoin(user, eq(user.id, issues.assigneeId))
      .where(and(...filters, tabFilter))
      .orderBy(...dispatchOrder(issues))
      .limit(QUEUE_PAGE_SIZE)
      .offset((input.page - 1) * QUEUE_PAGE_SIZE),
    db
      .select({
        backlog: sql<number>`count(*) filter (where ${issues.firstClaimedAt} is null)::int`,
        active: sql<number>`count(*) filter (where ${issues.firstClaimedAt} is not null)::int`,
        awaitingTriage: sql<number>`count(*) filter (where ${issues.triage} = 'pending')::int`,
      })
      .from(issues)
      .where(and(...filters)),
    db
      .selectDistinct({ runtime: agentKeys.runtime })
      .from(agentKeys)
      .where(eq(agentKeys.orgId, orgId))
      .orderBy(agentKeys.runtime),
    activeMembers(ctx),
  ]);

  const cipher = await ctx.keyring.forOrg(db, orgId);
  const [reasons, resumed] = await Promise.all([
    rankReasons(db, ctx.principal, rows.map((r) => r.issue)),
    resumedIssueIds(db, orgId, rows.map((r) => r.issue), now),
  ]);
  const counts = { backlog: Number(tallies[0]?.backlog ?? 0), active: Number(tallies[0]?.active ?? 0) };
  const total = input.tab === "backlog" ? counts.backlog : input.tab === "active" ? counts.active : counts.backlog + counts.active;
  return {
    input,
    now: now.toISOString(),
    page: input.page,
    pageCount: Math.max(1, Math.ceil(total / QUEUE_PAGE_SIZE)),
    total,
    counts: { ...counts, all: counts.backlog + counts.active },
    /** Of the issues matching the filters, those no agent is handed until a person accepts them. */
    awaitingTriage: Number(tallies[0]?.awaitingTriage ?? 0),
    runtimes: runtimes.map((r) => r.runtime),
    lanes: people.map((p) => p.email),
    issues: rows.map(({ issue, holderRuntime, lane }, index) => {
      const held = isLeaseLive(issue, now);
      return {
        position: (input.page - 1) * QUEUE_PAGE_SIZE + index + 1,
        identifier: issue.identifier,
        title: cipher.decrypt(issue.titleEnc) ?? "",
        work: issue.work,
        status: issue.status,
        priority: issue.priority,
        openBlockers: issue.openBlockerCount,
        /** An outsider's issue no agent is handed until a member accepts it (or cancels it) on its page. */
        awaitingTriage: issue.triage === "pending",
        pills: workPills(issue, now, resumed),
        lane,
        holderRuntime: held ? holderRuntime : null,
        leaseExpiresAt: held ? issue.leaseExpiresAt!.toISOString() : null,
        dueAt: issue.dueAt?.toISOString() ?? null,
        ...slaView(issue, now),
        why: reasons.get(issue.id)!,
        createdAt: issue.createdAt.toISOString(),
        updatedAt: issue.updatedAt.toISOString(),
      };
    }),
  };
}
export type QueuePage = Awaited<ReturnType<typeof queuePage>>;
export type QueueRow = QueuePage["issues"][number];
