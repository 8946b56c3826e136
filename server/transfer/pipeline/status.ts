import { and, desc, eq, ne } from "drizzle-orm";
import { z } from "zod";
import { linearImportRuns } from "../../../db/schema/index.ts";
import type { Ctx } from "../../context.ts";
import { notFound } from "../../errors.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { expireStaleFetch } from "./run-row.ts";

export const statusInput = z.object({ runId: z.string({ error: "runId is required" }).trim().min(1, "runId is required").max(200) });

/**
 * A run's progress (phase, done of total, a wait the source asked for, its counts) and, for the re-import
 * warning, when this source (team, project) was last imported into the org before it. Owners
 * and admins, their own org only; any source's run.
 */
export async function importStatus(ctx: Ctx, raw: z.input<typeof statusInput>) {
  const { runId } = statusInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing");
  const orgId = ctx.principal.orgId;
  await expireStaleFetch(ctx.db, orgId, ctx.clock.now());
  const [run] = await ctx.db.select().from(linearImportRuns).where(and(eq(linearImportRuns.id, runId), eq(linearImportRuns.orgId, orgId)));
  if (!run) throw notFound(`import ${runId}`, "Starting an import answers the run's id.");
  const [previous] = await ctx.db
    .select({ finishedAt: linearImportRuns.finishedAt })
    .from(linearImportRuns)
    .where(and(eq(linearImportRuns.orgId, orgId), eq(linearImportRuns.source, run.source), eq(linearImportRuns.teamId, run.teamId), eq(linearImportRuns.phase, "done"), ne(linearImportRuns.id, runId)))
    .orderBy(desc(linearImportRuns.finishedAt))
    .limit(1);
  return {
    runId: run.id,
    source: run.source,
    teamKey: run.teamKey,
    projectId: run.projectId,
    phase: run.phase,
    done: run.done,
    total: run.total,
    ...runCounts(run.counts),
    error: run.error,
    waitingUntil: run.phase === "fetching" && run.waitUntil && run.waitUntil > ctx.clock.now() ? run.waitUntil.toISOString() : null,
    startedAt: run.createdAt.toISOString(),
    finishedAt: run.finishedAt?.toISOString() ?? null,
    lastImportAt: previous?.finishedAt?.toISOString() ?? null,
  };
}

/**
 * The run's counts (created, updated, unchanged, comments, ghosts, filesCopied, linksKept) and,
 * apart, why attachments stayed links (`linkReasons`: link, tooLarge, failed), so every count
 * stays a number.
 */
export function runCounts(stored: string | null): { counts: Record<string, number> | null; linkReasons: Record<string, number> } {
  if (!stored) return { counts: null, linkReasons: {} };
  const { linkReasons = {}, ...counts } = JSON.parse(stored) as Record<string, number> & { linkReasons?: Record<string, number> };
  return { counts, linkReasons };
}
