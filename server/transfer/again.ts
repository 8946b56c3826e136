import { and, desc, eq } from "drizzle-orm";
import type { z } from "zod";
import { linearImportRuns, projects } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, notFound } from "../errors.ts";
import { actorOf, requireRole } from "../orgs/access.ts";
import { openKeptCredential, sourceRefInput } from "./pipeline/kept-credentials.ts";
import { runImport } from "./sources.ts";

/**
 * Imports a team or project again with its kept credential and mapping (owners and admins), into
 * the project its last run went to, through the same door an agent's `run_import` takes: the run
 * reconciles, as any re-import does. A credential the source now refuses is answered with what
 * to do about it.
 */
export async function importAgain(ctx: Ctx, raw: z.input<typeof sourceRefInput>) {
  const ref = sourceRefInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing again");
  const [last] = await ctx.db
    .select({ prefix: projects.prefix })
    .from(linearImportRuns)
    .innerJoin(projects, eq(projects.id, linearImportRuns.projectId))
    .where(and(eq(linearImportRuns.orgId, ctx.principal.orgId), eq(linearImportRuns.source, ref.source), eq(linearImportRuns.teamId, ref.sourceId)))
    .orderBy(desc(linearImportRuns.createdAt))
    .limit(1);
  if (!last) throw notFound(`an earlier ${ref.source} import of ${ref.sourceId}`, "Import it once with the form; importing again goes into the project that import made.");
  const kept = await openKeptCredential(ctx, ref);
  try {
    const started = await runImport(ctx, { ...kept.credential, source: ref.source, target: ref.sourceId, project: last.prefix, mapping: kept.mapping, dryRun: false });
    if (!("runId" in started)) throw new Error("runImport with a target and dryRun false starts a run");
    return { ...ref, runId: started.runId, total: started.total, project: started.project };
  } catch (error) {
    if (error instanceof DomainError && error.code === "UNAUTHORIZED") {
      throw new DomainError("UNAUTHORIZED", `${error.message} (the kept credential)`, "Forget the kept credential and import with a new one, keeping it.", { source: ref.source, sourceId: ref.sourceId });
    }
    throw error;
  }
}
