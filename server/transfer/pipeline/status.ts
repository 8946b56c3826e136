import { and, desc, eq, lt, ne, or } from "drizzle-orm";
import { z } from "zod";
import { linearImportRuns } from "../../../db/schema/index.ts";
import type { Ctx } from "../../context.ts";
import { notFound } from "../../errors.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { decodeCursor, encodeCursor, pageArgs } from "../../paging.ts";
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
  await expireStaleFetch(ctx, ctx.db, orgId);
  const [run] = await ctx.db.select().from(linearImportRuns).where(and(eq(linearImportRuns.id, runId), eq(linearImportRuns.orgId, orgId)));
  if (!run) throw notFound(`import ${runId}`, "Starting an import answers the run's id.");
  const { failure, ...status } = await statusOf(ctx, run);
  return { ...status, error: failure, etaSeconds: etaSecondsOf(run, ctx.clock.now()) };
}

/**
 * About how long the run's current step has left, in seconds, at the pace it has kept since the
 * run began (the apply runs beside the fetch, so both steps' paces are over the whole run); null
 * until there is a pace to go by, and once the step is over.
 */
export function etaSecondsOf(run: Pick<RunRow, "phase" | "done" | "total" | "createdAt">, now: Date): number | null {
  const elapsed = (now.getTime() - run.createdAt.getTime()) / 1000;
  if ((run.phase !== "fetching" && run.phase !== "applying") || run.done <= 0 || run.done >= run.total || elapsed < 2) return null;
  return Math.max(1, Math.round((elapsed * (run.total - run.done)) / run.done));
}

type RunRow = typeof linearImportRuns.$inferSelect;

async function statusOf(ctx: Ctx, run: RunRow) {
  const { orgId, id: runId } = run;
  const [previous] = await ctx.db
    .select({ finishedAt: linearImportRuns.finishedAt })
    .from(linearImportRuns)
    .where(and(eq(linearImportRuns.orgId, orgId), eq(linearImportRuns.source, run.source), eq(linearImportRuns.teamId, run.teamId), eq(linearImportRuns.phase, "done"), ne(linearImportRuns.id, runId)))
    .orderBy(desc(linearImportRuns.finishedAt))
    .limit(1);
  return { ...runView(ctx, run), lastImportAt: previous?.finishedAt?.toISOString() ?? null };
}

/**
 * A run as every door shows it: its progress, counts and outcome, never a credential (none is
 * stored). Its failure code is `failure`, not `error`, which an MCP reply keeps for a refused call;
 * importStatus, which the Dash and the CLI read, still calls it `error`.
 */
function runView(ctx: Ctx, run: RunRow) {
  return {
    runId: run.id,
    source: run.source,
    teamKey: run.teamKey,
    projectId: run.projectId,
    phase: run.phase,
    done: run.done,
    total: run.total,
    ...runCounts(run.counts),
    failure: run.error,
    waitingUntil: run.phase === "fetching" && run.waitUntil && run.waitUntil > ctx.clock.now() ? run.waitUntil.toISOString() : null,
    startedAt: run.createdAt.toISOString(),
    finishedAt: run.finishedAt?.toISOString() ?? null,
  };
}

/** The org's most recent import, any source, as importStatus shows it (owners and admins). */
export async function latestImport(ctx: Ctx) {
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing");
  const orgId = ctx.principal.orgId;
  await expireStaleFetch(ctx, ctx.db, orgId);
  const [run] = await ctx.db.select().from(linearImportRuns).where(eq(linearImportRuns.orgId, orgId)).orderBy(desc(linearImportRuns.createdAt), desc(linearImportRuns.id)).limit(1);
  if (!run) throw notFound("import in this org", "No import has run here yet: a dry run of run_import shows what one would bring.");
  return statusOf(ctx, run);
}

export const importHistoryInput = z.object(pageArgs);
const historyCursor = z.object({ at: z.string(), id: z.string() });

/** The org's imports, newest first, any source, paged (owners and admins). */
export async function importHistory(ctx: Ctx, raw: z.input<typeof importHistoryInput>) {
  const { cursor, limit = 20 } = importHistoryInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing");
  const orgId = ctx.principal.orgId;
  const after = decodeCursor(cursor, historyCursor);
  await expireStaleFetch(ctx, ctx.db, orgId);
  const at = after ? new Date(after.at) : null;
  const rows = await ctx.db
    .select()
    .from(linearImportRuns)
    .where(and(eq(linearImportRuns.orgId, orgId), at && after ? or(lt(linearImportRuns.createdAt, at), and(eq(linearImportRuns.createdAt, at), lt(linearImportRuns.id, after.id))) : undefined))
    .orderBy(desc(linearImportRuns.createdAt), desc(linearImportRuns.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    imports: page.map((run) => runView(ctx, run)),
    ...(rows.length > limit && last ? { nextCursor: encodeCursor({ at: last.createdAt.toISOString(), id: last.id }) } : {}),
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
