import { and, desc, eq, ne } from "drizzle-orm";
import { z } from "zod";
import { linearImportRuns } from "../../../db/schema/index.ts";
import type { Ctx } from "../../context.ts";
import { notFound } from "../../errors.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { expireStaleFetch } from "./run-row.ts";

export const statusInput = z.object({ runId: z.string({ error: "runId is required" }).trim().min(1, "runId is required").max(200) });

/**
 * A run's progress (phase, done of total) and, for the re-import warning, when this team was
 * last imported into the org before it. Owners and admins, their own org only.
 */
export async function linearImportStatus(ctx: Ctx, raw: z.input<typeof statusInput>) {
  const { runId } = statusInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Linear");
  const orgId = ctx.principal.orgId;
  await expireStaleFetch(ctx.db, orgId, ctx.clock.now());
  const [run] = await ctx.db.select().from(linearImportRuns).where(and(eq(linearImportRuns.id, runId), eq(linearImportRuns.orgId, orgId)));
  if (!run) throw notFound(`import ${runId}`, "startLinearImport answers the run's id.");
  const [previous] = await ctx.db
    .select({ finishedAt: linearImportRuns.finishedAt })
    .from(linearImportRuns)
    .where(and(eq(linearImportRuns.orgId, orgId), eq(linearImportRuns.teamId, run.teamId), eq(linearImportRuns.phase, "done"), ne(linearImportRuns.id, runId)))
    .orderBy(desc(linearImportRuns.finishedAt))
    .limit(1);
  return {
    runId: run.id,
    teamKey: run.teamKey,
    projectId: run.projectId,
    phase: run.phase,
    done: run.done,
    total: run.total,
    counts: run.counts ? (JSON.parse(run.counts) as Record<string, number>) : null,
    error: run.error,
    startedAt: run.createdAt.toISOString(),
    finishedAt: run.finishedAt?.toISOString() ?? null,
    lastImportAt: previous?.finishedAt?.toISOString() ?? null,
  };
}
