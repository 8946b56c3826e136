import { and, eq, inArray, sql, type Column, type SQL } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { members, projects, type MemberRole } from "../../db/schema/index.ts";
import type { Principal } from "../context.ts";
import { invalidInput, notFound } from "../errors.ts";

/**
 * Project scoping (decision 042), the one home of the rule. A member (role `member`) may be
 * scoped to some of the org's projects; their agents' keys, session keys and OAuth tokens act
 * as them and inherit it. The principal carries the scope (`projectIds`, read with the
 * membership once per request); every read or write of project-bound rows goes through
 * `reachable`, so what lies outside is NOT_FOUND, as if it did not exist. Owners and admins are
 * never scoped: their scope reads as null whatever the row holds.
 */
export type Reach = Pick<Principal, "orgId" | "projectIds">;

/** The scope a membership grants, as an SQL expression (owners and admins: null, every project). */
export const memberProjectIds = sql<string[] | null>`case when ${members.role} = 'member' then ${members.projectIds} end`;

/** Rows of the org within the principal's projects: `table` has org_id and project_id columns. */
export function reachable(reach: Reach, table: { orgId: Column; projectId: Column }): SQL {
  return and(eq(table.orgId, reach.orgId), inScope(reach, table.projectId))!;
}

/** The projects table in `reachable`'s terms: a project is its own project. */
export const projectReach = { orgId: projects.orgId, projectId: projects.id };

/** Just the project part of `reachable`: true for an unscoped principal. */
export function inScope(reach: Pick<Reach, "projectIds">, projectId: Column | SQL): SQL {
  if (reach.projectIds === null) return sql`true`;
  if (reach.projectIds.length === 0) return sql`false`;
  return inArray(projectId as Column, reach.projectIds);
}

/** Whether one project is within the principal's scope. */
export const reaches = (reach: Pick<Reach, "projectIds">, projectId: string) =>
  reach.projectIds === null || reach.projectIds.includes(projectId);

/** A scope as callers give it: project ids, or null for every project. */
export const projectIdsSchema = z
  .array(z.string().trim().min(1).max(100), { error: "projectIds is a list of project ids, or null for every project" })
  .min(1, "name at least one project, or pass null for every project")
  .max(100, "a scope names at most 100 projects")
  .nullable();

/**
 * Checks a scope about to be stored on a membership or an invite: it applies to members only
 * (owners and admins see every project, so a scope given with their role is refused rather than
 * ignored), and names only projects of the org (an unknown id is NOT_FOUND). Returns it
 * deduplicated, in a stable order.
 */
export async function checkScope(tx: Db, orgId: string, role: MemberRole, projectIds: string[] | null): Promise<string[] | null> {
  if (projectIds === null) return null;
  if (role !== "member") {
    throw invalidInput(`an ${role} sees every project and cannot be scoped`, "Scope members only; pass projectIds null for an admin or owner.");
  }
  const wanted = [...new Set(projectIds)].sort();
  const found = await tx.select({ id: projects.id }).from(projects).where(and(eq(projects.orgId, orgId), inArray(projects.id, wanted)));
  const missing = wanted.find((id) => !found.some((row) => row.id === id));
  if (missing) throw notFound(`project ${missing}`, "List the org's projects (and their ids) with `retasc projects list`.");
  return wanted;
}
