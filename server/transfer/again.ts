import { and, desc, eq } from "drizzle-orm";
import type { z } from "zod";
import { linearImportRuns } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, notFound } from "../errors.ts";
import { actorOf, requireRole } from "../orgs/access.ts";
import { startAsanaImport } from "./asana/index.ts";
import { startClickUpImport } from "./clickup/index.ts";
import { startJiraImport } from "./jira/index.ts";
import { startLinearImport } from "./linear/index.ts";
import { openKeptCredential, sourceRefInput, type SourceRef } from "./pipeline/kept-credentials.ts";
import { startShortcutImport } from "./shortcut/index.ts";

/** Each source's start, given the kept credential, what it reads (by the input its start names it with) and the project. */
const starts: Record<SourceRef["source"], (ctx: Ctx, input: Record<string, unknown>) => Promise<{ runId: string }>> = {
  linear: (ctx, input) => startLinearImport(ctx, input as never),
  jira: (ctx, input) => startJiraImport(ctx, input as never),
  asana: (ctx, input) => startAsanaImport(ctx, input as never),
  shortcut: (ctx, input) => startShortcutImport(ctx, input as never),
  clickup: (ctx, input) => startClickUpImport(ctx, input as never),
};
const readsBy: Record<SourceRef["source"], string> = { linear: "teamId", jira: "projectKey", asana: "projectGid", shortcut: "team", clickup: "location" };

/**
 * Imports a team or project again with its kept credential and mapping (owners and admins), into
 * the project its last run went to: the run reconciles, as any re-import does. A credential the
 * source now refuses is answered with what to do about it.
 */
export async function importAgain(ctx: Ctx, raw: z.input<typeof sourceRefInput>) {
  const ref = sourceRefInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing again");
  const [last] = await ctx.db
    .select({ projectId: linearImportRuns.projectId })
    .from(linearImportRuns)
    .where(and(eq(linearImportRuns.orgId, ctx.principal.orgId), eq(linearImportRuns.source, ref.source), eq(linearImportRuns.teamId, ref.sourceId)))
    .orderBy(desc(linearImportRuns.createdAt))
    .limit(1);
  if (!last) throw notFound(`an earlier ${ref.source} import of ${ref.sourceId}`, "Import it once with the form; importing again goes into the project that import made.");
  const kept = await openKeptCredential(ctx, ref);
  try {
    const started = await starts[ref.source](ctx, { ...kept.credential, [readsBy[ref.source]]: ref.sourceId, projectId: last.projectId, mapping: kept.mapping });
    return { ...started, ...ref, projectId: last.projectId };
  } catch (error) {
    if (error instanceof DomainError && error.code === "UNAUTHORIZED") {
      throw new DomainError("UNAUTHORIZED", `${error.message} (the kept credential)`, "Forget the kept credential and import with a new one, keeping it.", { source: ref.source, sourceId: ref.sourceId });
    }
    throw error;
  }
}
