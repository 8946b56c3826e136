import { and, eq, or, sql } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import { retryingConflicts } from "../../db/retry.ts";
import { orgs, projectPrefixAliases, projects } from "../../db/schema/index.ts";
import { systemPrincipal, type Ctx, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { invalidInput, notFound } from "../errors.ts";
import { actorOf, recordOrgActivity, requireRole } from "./access.ts";
import { prefixSchema } from "./fields.ts";
import { prefixRaceRefusal, projectNamedBy, requirePrefixFree } from "./prefixes.ts";
import { projectReach, reachable } from "./scope.ts";

/** `retasc project rename-prefix`, the Dash's project settings and `npm run admin -- rename-prefix` send this (decision 089). */
export const renamePrefixInput = z.object({
  /** The project: its id or its prefix, an old one included. Default: the key's project, else the org's only one. */
  project: z.string().trim().min(1).max(100).optional(),
  /** The new prefix, as a project's create takes it (2-10 letters or digits, a letter first; upper-cased). */
  prefix: prefixSchema,
});
export type RenamePrefixInput = z.input<typeof renamePrefixInput>;

/**
 * Renames a project's prefix (owners and admins, decision 089). In one transaction: the project
 * row is locked first (every create numbers under that lock and reads the prefix from it, so
 * none is made with the old prefix after this commits), the old prefix is kept as the project's
 * (so `OLD-42` goes on naming the issue now `NEW-42` at every door, through retasc_identifier),
 * and every issue's identifier is rewritten. A prefix another project of the org has, now or
 * before a rename of its own, is refused (CONFLICT); one this project had before is taken back.
 * Numbers, ids, relations, branches already handed out and the activity log stay as they are.
 */
export async function renameProjectPrefix(ctx: Ctx, raw: RenamePrefixInput) {
  const input = renamePrefixInput.parse(raw);
  const orgId = ctx.principal.orgId;
  try {
    // A claim or save holding an issue while it checks its project (a foreign key) and this holding the
    // project while it rewrites that issue can deadlock: PostgreSQL ends one, and each side reruns.
    return await retryingConflicts(() => ctx.db.transaction(async (tx) => {
      requireRole(await actorOf(ctx, tx), ["owner", "admin"], "renaming a project's prefix");
      const project = await lockProject(tx, ctx, input.project);
      const from = project.prefix;
      const to = input.prefix;
      if (from === to) return { projectId: project.id, prefix: to, previous: from, renamed: 0, changed: false, oldPrefixes: await oldPrefixesOf(tx, project.id) };
      await requirePrefixFree(tx, orgId, to, project.id);
      // Taking back a prefix it had: that one names it as its current prefix again.
      await tx.delete(projectPrefixAliases).where(and(eq(projectPrefixAliases.orgId, orgId), eq(projectPrefixAliases.prefix, to)));
      await tx.update(projects).set({ prefix: to }).where(eq(projects.id, project.id));
      await tx.insert(projectPrefixAliases).values({ orgId, prefix: from, projectId: project.id });
      const [rewritten] = await query<{ n: number }>(
        tx,
        // Locked in id order first, as lockIssues locks: a writer holding some of them waits, never deadlocks.
        sql`with locked as (
              select id from issues where project_id = ${project.id} order by id for update
            ), renamed as (
              update issues i set identifier = ${to} || '-' || i.number from locked where i.id = locked.id returning 1
            ) select count(*)::int as n from renamed`,
      );
      const renamed = Number(rewritten?.n ?? 0);
      await recordOrgActivity(ctx, tx, "project.prefix_renamed", { projectId: project.id, from, to, issues: renamed });
      return { projectId: project.id, prefix: to, previous: from, renamed, changed: true, oldPrefixes: await oldPrefixesOf(tx, project.id) };
    }));
  } catch (error) {
    throw prefixRaceRefusal(error, input.prefix) ?? error;
  }
}

/** The project named by id or prefix (current or old), locked for the rename; without a name, the key's project or the org's only one. */
async function lockProject(tx: Db, ctx: Ctx, named: string | undefined): Promise<{ id: string; prefix: string }> {
  const { principal } = ctx;
  const upper = named?.toUpperCase();
  const which = named
    ? or(eq(projects.id, named), projectNamedBy(principal.orgId, upper!))
    : principal.projectId
      ? eq(projects.id, principal.projectId)
      : undefined;
  const rows = await tx
    .select({ id: projects.id, prefix: projects.prefix })
    .from(projects)
    .where(and(reachable(principal, projectReach), which))
    .orderBy(projects.createdAt)
    .limit(2)
    .for("update");
  if (rows.length === 0) throw notFound(named ? `project ${named}` : "project", "Name the project by its prefix or id (`retasc project list`, list_projects).");
  if (rows.length > 1) throw invalidInput("the org has several projects", "Name the project: --project <PFX> (its prefix or id).");
  return rows[0]!;
}

async function oldPrefixesOf(tx: Db, projectId: string): Promise<string[]> {
  const rows = await tx
    .select({ prefix: projectPrefixAliases.prefix })
    .from(projectPrefixAliases)
    .where(eq(projectPrefixAliases.projectId, projectId))
    .orderBy(projectPrefixAliases.createdAt, projectPrefixAliases.prefix);
  return rows.map((r) => r.prefix);
}

export type RenamedPrefix = Awaited<ReturnType<typeof renameProjectPrefix>>;

/** `npm run admin -- rename-prefix --org <id> [--project <PFX|id>] --prefix <NEW>`: the operator, as the org's owner would. */
export async function renamePrefixCommand(services: Services, argv: Record<string, unknown>) {
  const orgId = z.string().trim().min(1, "--org is required").parse(argv.org);
  const [org] = await services.db.select({ id: orgs.id }).from(orgs).where(eq(orgs.id, orgId));
  if (!org) throw notFound(`org ${orgId}`, "Pass an org's id.");
  return renameProjectPrefix(withPrincipal(services, systemPrincipal(orgId)), {
    prefix: String(argv.prefix ?? ""),
    ...(argv.project !== undefined ? { project: String(argv.project) } : {}),
  });
}
