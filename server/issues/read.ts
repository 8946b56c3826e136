import type { z } from "zod";
import { and, eq, inArray, sql, type SQL } from "drizzle-orm";
import { dispatchOrder } from "../../db/schema/dispatch.ts";
import { issues } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { getIssueInput, listIssuesInput } from "./schemas.ts";
import { projectFor, resolveAssignee } from "./inputs.ts";
import { findIssue } from "./lookups.ts";
import { issueView, summarize } from "./views.ts";
import { isOpen } from "../../db/schema/dispatch.ts";
import { cursorAt, fitting, positionOf } from "../paging.ts";
import { reachable } from "../orgs/scope.ts";

export async function getIssue(ctx: Ctx, raw: z.input<typeof getIssueInput>) {
  const { identifier } = getIssueInput.parse(raw);
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const row = await findIssue(ctx.db, ctx.principal, identifier);
  return issueView(ctx.db, ctx.principal, cipher, row, ctx.clock.now());
}

export async function listIssues(ctx: Ctx, raw: z.input<typeof listIssuesInput> = {}) {
  const input = listIssuesInput.parse(raw);
  const orgId = ctx.principal.orgId;
  const where: SQL[] = [reachable(ctx.principal, issues)];
  const statuses = input.status ?? null;
  where.push(statuses ? inArray(issues.status, statuses) : isOpen(issues.status));
  if (input.priority !== undefined) where.push(eq(issues.priority, input.priority));
  if (input.slaState) where.push(eq(issues.slaState, input.slaState));
  if (input.project) where.push(eq(issues.projectId, (await projectFor(ctx.db, ctx, input.project)).id));
  if (input.assignee !== undefined) {
    const id = await resolveAssignee(ctx.db, ctx, input.assignee);
    where.push(id ? eq(issues.assigneeId, id) : sql`${issues.assigneeId} is null`);
  }
  if (input.author) where.push(eq(issues.authorId, (await resolveAssignee(ctx.db, ctx, input.author))!));
  if (input.label) {
    where.push(sql`${issues.id} in (select il.issue_id from issue_labels il join labels l on l.id = il.label_id
      where l.org_id = ${orgId} and l.name = ${input.label})`);
  }
  // Dispatch order has five keys and changes as work moves: the cursor is a position in it.
  const offset = positionOf(input.cursor);
  const rows = await ctx.db
    .select()
    .from(issues)
    .where(and(...where))
    .orderBy(...dispatchOrder(issues))
    .limit(input.limit + 1)
    .offset(offset);
  const cipher = await ctx.keyring.forOrg(ctx.db, orgId);
  const summaries = await summarize(ctx.db, cipher, rows.slice(0, input.limit), ctx.clock.now());
  const page = summaries.slice(0, fitting(summaries.map((s) => JSON.stringify(s).length)));
  return { issues: page, ...(rows.length > page.length ? { nextCursor: cursorAt(offset + page.length) } : {}) };
}
