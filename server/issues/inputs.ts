import { and, eq, or } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { members, orgs, projects, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, invalidInput, notFound } from "../errors.ts";
import { endOfDayIn } from "./levels.ts";
import { projectReach, reachable } from "../orgs/scope.ts";
import { projectNamedBy } from "../orgs/index.ts";

/** A caller's arguments to an issue write resolved: the assignee, the due date in the org's zone, the project. */

/** Resolves an assignee argument (email, user id, "me", null) to an active member's user id. */
export async function resolveAssignee(tx: Db, ctx: Ctx, assignee: string | null): Promise<string | null> {
  if (assignee === null) return null;
  if (assignee.toLowerCase() === "me") {
    if (!ctx.principal.userId) throw invalidInput('"me" needs a human principal', "Pass an email instead.");
    return ctx.principal.userId;
  }
  const rows = await tx
    .select({ userId: members.userId, status: members.status })
    .from(members)
    .innerJoin(user, eq(user.id, members.userId))
    .where(
      and(
        eq(members.orgId, ctx.principal.orgId),
        or(eq(user.email, assignee.toLowerCase()), eq(user.id, assignee)),
      ),
    );
  const member = rows[0];
  if (!member) throw notFound(`member ${assignee}`, "Assign to a member's email, their user id, \"me\", or null; list_members shows who is in the org.");
  if (member.status !== "active") {
    throw new DomainError("INVALID_INPUT", `${assignee} is not an active member`, "Assign to an active member.");
  }
  return member.userId;
}

export async function orgTimeZone(tx: Db, orgId: string): Promise<string> {
  const rows = await tx.select({ tz: orgs.timeZone }).from(orgs).where(eq(orgs.id, orgId));
  return rows[0]?.tz ?? "UTC";
}

/** `dueAt` as given by a caller: epoch ms, ISO instant, or YYYY-MM-DD (end of that day in the org's zone). */
export function parseDueAt(value: number | string | null, timeZone: string): Date | null {
  if (value === null) return null;
  if (typeof value === "number") return new Date(value);
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const calendar = new Date(`${value}T00:00:00Z`);
    if (!Number.isNaN(calendar.getTime()) && calendar.toISOString().slice(0, 10) === value) {
      return endOfDayIn(value, timeZone);
    }
  } else if (/^\d{4}-\d{2}-\d{2}T/.test(value)) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw invalidInput(
    `dueAt "${value}" is not a date`,
    "Pass epoch milliseconds, an ISO 8601 instant (2026-12-01T17:00:00Z) or a date (2026-12-01).",
  );
}

export async function projectFor(tx: Db, ctx: Ctx, prefix?: string): Promise<{ id: string; prefix: string }> {
  const where = and(
    reachable(ctx.principal, projectReach),
    prefix
      ? projectNamedBy(ctx.principal.orgId, prefix.toUpperCase())
      : ctx.principal.projectId
        ? eq(projects.id, ctx.principal.projectId)
        : undefined,
  );
  const rows = await tx.select({ id: projects.id, prefix: projects.prefix }).from(projects).where(where).orderBy(projects.createdAt).limit(1);
  if (!rows[0]) throw notFound(prefix ? `project ${prefix}` : "project", "Pass `project` with a prefix from list_projects.");
  return rows[0];
}
