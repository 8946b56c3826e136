import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { linearImportPages, linearImportRuns, projects } from "../../../db/schema/index.ts";
import type { Ctx, Services } from "../../context.ts";
import { DomainError, invalidInput, notFound } from "../../errors.ts";
import { enqueue } from "../../outbox/index.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { createProject, newId } from "../../orgs/index.ts";
import { chargeOrgAction } from "../../usage/meter.ts";
import { linearApi, linearRefusal, type Backoff } from "./client.ts";
import { fetchIssuePage, fetchTeams } from "./fetch.ts";
import { expireFailedApply, expireStaleFetch, lockRun, publishProgress } from "./run-row.ts";
import { transactionWithNotices } from "../../events/index.ts";

const apiKey = z.string({ error: "apiKey is required" }).trim().min(1, "apiKey is required").max(500);

export const listTeamsInput = z.object({ apiKey });
export const startInput = z
  .object({
    apiKey,
    teamId: z.string({ error: "teamId is required" }).trim().min(1, "teamId is required").max(200),
    projectId: z.string().trim().min(1).max(200).optional(),
    newProject: z.object({ name: z.string().trim().min(1, "newProject.name is required").max(100) }).optional(),
  })
  .refine((v) => Boolean(v.projectId) !== Boolean(v.newProject), { message: "pass projectId or newProject, one of them" });

/** The teams the key sees, each with the date it was last imported into this org (the Dash's re-import warning names it). */
export async function listLinearTeams(ctx: Ctx, raw: z.input<typeof listTeamsInput>, backoff?: Backoff) {
  const input = listTeamsInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Linear");
  const teams = await fetchTeams(linearApi(ctx.config, input.apiKey, backoff));
  const runs = await ctx.db
    .select({ teamId: linearImportRuns.teamId, finishedAt: linearImportRuns.finishedAt })
    .from(linearImportRuns)
    .where(and(eq(linearImportRuns.orgId, ctx.principal.orgId), eq(linearImportRuns.phase, "done")));
  const last = (teamId: string) =>
    runs.filter((r) => r.teamId === teamId && r.finishedAt).map((r) => r.finishedAt!.toISOString()).sort().at(-1) ?? null;
  return teams.map((t) => ({ ...t, lastImportAt: last(t.id) }));
}

/** Fetchers running in this process, by run: the key lives in their closure and nowhere else. */
const fetching = new Map<string, Promise<void>>();
/** Resolves once this process's fetch for the run has ended (tests and the benchmark wait on it). */
export const fetchSettled = (runId: string) => fetching.get(runId) ?? Promise.resolve();

/**
 * Starts an import of a Linear team into a project of the org (owners and admins). The project
 * is new (its prefix the team's key) or one whose prefix already is the team's key, so ENG-123
 * stays ENG-123. The run row is the org's one live import (a unique index refuses a second).
 * This process then fetches the team page by page into encrypted staging, holding the key in
 * memory for the run only; the outbox job `linear.apply` applies the pages (decision 025).
 */
export async function startLinearImport(ctx: Ctx, raw: z.input<typeof startInput>, backoff?: Backoff) {
  const input = startInput.parse(raw);
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "importing from Linear");
  const orgId = ctx.principal.orgId;
  const api = linearApi(ctx.config, input.apiKey, backoff);
  const team = (await fetchTeams(api)).find((t) => t.id === input.teamId);
  if (!team) throw notFound(`Linear team ${input.teamId}`, "listLinearTeams names the teams this key sees.");
  const now = ctx.clock.now();
  const runId = newId();
  await transactionWithNotices(ctx.db, async (tx) => {
    await expireStaleFetch(tx, orgId, now);
    await expireFailedApply(ctx, tx, orgId, now);
    let projectId = input.projectId;
    if (projectId) {
      const [project] = await tx.select().from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId)));
      if (!project) throw notFound(`project ${projectId}`);
      if (project.prefix !== team.key.toUpperCase()) {
        throw invalidInput(`project ${project.prefix} does not have the team's key ${team.key} as its prefix`, "Import into a new project, or into the one an earlier import of this team made.");
      }
    } else {
      projectId = (await createProject(tx, { orgId, name: input.newProject!.name, prefix: team.key })).id;
    }
    try {
      await tx.insert(linearImportRuns).values({ id: runId, orgId, projectId, teamId: team.id, teamKey: team.key.toUpperCase(), startedBy: actor.userId, total: team.issueCount, fetchHeartbeatAt: now, createdAt: now, updatedAt: now });
    } catch (error) {
      if (uniqueViolation(error)) throw new DomainError("CONFLICT", "an import is already running in this org", "Wait for it to finish; linearImportStatus shows its progress.", { reason: "import_running" });
      throw error;
    }
    await chargeOrgAction(tx, ctx, "import_linear");
    await publishProgress(ctx, tx, { id: runId, orgId, phase: "fetching", done: 0, total: team.issueCount, error: null });
  });
  const run = fetchIntoStaging(ctx, runId, orgId, team.id, api).finally(() => fetching.delete(runId));
  fetching.set(runId, run);
  return { runId, teamKey: team.key, total: team.issueCount };
}

function uniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; cause?: { code?: string } };
  return (e.code ?? e.cause?.code) === "23505";
}

/** Page after page into staging; the last page's transaction hands the run to the outbox. Never throws: a failure is the run's state. */
async function fetchIntoStaging(services: Services, runId: string, orgId: string, teamId: string, api: ReturnType<typeof linearApi>): Promise<void> {
  const cipher = await services.keyring.forOrg(services.db, orgId);
  let cursor: string | null = null;
  try {
    for (;;) {
      const page = await fetchIssuePage(api, teamId, cursor);
      const alive = await transactionWithNotices(services.db, async (tx) => {
        const run = await lockRun(tx, runId);
        if (!run || run.phase !== "fetching") return false;
        const now = services.clock.now();
        const seq = run.pagesFetched + 1;
        await tx.insert(linearImportPages).values({ runId, seq, orgId, payloadEnc: cipher.encrypt(JSON.stringify(page.issues)) });
        const done = run.done + page.issues.length;
        const phase = page.hasNextPage ? "fetching" : "applying";
        const total = page.hasNextPage ? Math.max(run.total, done) : done;
        await tx.update(linearImportRuns).set({ pagesFetched: seq, done: page.hasNextPage ? done : 0, total, phase, fetchHeartbeatAt: now, updatedAt: now }).where(eq(linearImportRuns.id, runId));
        if (!page.hasNextPage) await enqueue(tx, "linear.apply", { orgId, runId });
        await publishProgress(services, tx, { id: runId, orgId, phase, done: page.hasNextPage ? done : 0, total, error: null });
        return page.hasNextPage;
      });
      if (!alive) return;
      cursor = page.endCursor;
    }
  } catch (error) {
    const code = linearRefusal(error).code;
    await transactionWithNotices(services.db, async (tx) => {
        const now = services.clock.now();
        await tx.update(linearImportRuns).set({ phase: "failed", error: code, finishedAt: now, updatedAt: now }).where(and(eq(linearImportRuns.id, runId), eq(linearImportRuns.phase, "fetching")));
        await tx.delete(linearImportPages).where(eq(linearImportPages.runId, runId));
        await publishProgress(services, tx, { id: runId, orgId, phase: "failed", done: 0, total: 0, error: code });
      })
      .catch(() => {});
  }
}
