import { and, asc, count, eq } from "drizzle-orm";
import { z } from "zod";
import { issueStatuses, issues, projects, type IssueStatus } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { invalidInput, notFound } from "../errors.ts";
import { prefixSchema } from "./fields.ts";
import { projectNamedBy } from "./prefixes.ts";
import { projectReach, reachable } from "./scope.ts";

export const listProjectsInput = z.object({});
export const getProjectInput = z.object({
  prefix: prefixSchema.optional().describe("like RTSC; default: your key's project"),
});

const projectColumns = {
  id: projects.id,
  prefix: projects.prefix,
  name: projects.name,
  nextNumber: projects.nextNumber,
  createdAt: projects.createdAt,
};

function projectView(row: { id: string; prefix: string; name: string; nextNumber: number; createdAt: Date }) {
  return {
    id: row.id,
    prefix: row.prefix,
    name: row.name,
    /** Issues ever numbered in the project; numbers are never reused. */
    issueCounter: row.nextNumber - 1,
    createdAt: row.createdAt.toISOString(),
  };
}

/** Every project of the caller's org that it reaches, by prefix. */
export async function listProjects(ctx: Ctx, input: z.input<typeof listProjectsInput>) {
  listProjectsInput.parse(input);
  const rows = await ctx.db
    .select(projectColumns)
    .from(projects)
    .where(reachable(ctx.principal, projectReach))
    .orderBy(asc(projects.prefix));
  return { projects: rows.map(projectView) };
}

/**
 * One project with its issues counted by status. Without a prefix: the key's project,
 * or the org's only project.
 */
export async function getProject(ctx: Ctx, input: z.input<typeof getProjectInput>) {
  const { prefix } = getProjectInput.parse(input);
  const { projectId } = ctx.principal;
  const which = prefix ? projectNamedBy(ctx.principal.orgId, prefix) : projectId ? eq(projects.id, projectId) : undefined;
  const rows = await ctx.db.select(projectColumns).from(projects).where(and(reachable(ctx.principal, projectReach), which)).limit(2);
  if (rows.length === 0) throw notFound(`project ${prefix ?? ""}`.trim(), "list_projects shows the prefixes of your org.");
  if (rows.length > 1) {
    throw invalidInput("your key is not scoped to a project and the org has several", "Pass prefix; list_projects shows them.");
  }
  const project = rows[0]!;
  const counts = await ctx.db
    .select({ status: issues.status, n: count() })
    .from(issues)
    .where(eq(issues.projectId, project.id))
    .groupBy(issues.status);
  const byStatus = Object.fromEntries(issueStatuses.map((s) => [s, 0])) as Record<IssueStatus, number>;
  for (const row of counts) byStatus[row.status] = Number(row.n);
  return {
    ...projectView(project),
    byStatus,
    open: byStatus.todo + byStatus.doing + byStatus.blocked + byStatus.review,
  };
}
