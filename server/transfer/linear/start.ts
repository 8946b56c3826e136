import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { linearImportRuns } from "../../../db/schema/index.ts";
import type { Ctx } from "../../context.ts";
import { notFound } from "../../errors.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { dryRun } from "../pipeline/dry-run.ts";
import { keepCredentialInput } from "../pipeline/kept-credentials.ts";
import { beginImport, oneProject, projectTarget, sourceMappingInput } from "../pipeline/start.ts";
import { linearApi, type Backoff } from "./client.ts";
import { fetchTeams } from "./fetch.ts";
import { linearReader } from "./normalize.ts";

const apiKey = z.string({ error: "apiKey is required" }).trim().min(1, "apiKey is required").max(500);

export const listTeamsInput = z.object({ apiKey });
export const dryRunInput = z.object({ apiKey, teamId: z.string({ error: "teamId is required" }).trim().min(1, "teamId is required").max(200), mapping: sourceMappingInput });
export const startInput = dryRunInput.extend({ ...projectTarget, ...keepCredentialInput }).refine(...oneProject);

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

/** The team the key sees, as the pipeline reads it (bench/imports.ts times its reading alone). */
export async function linearSource(ctx: Ctx, input: z.output<typeof dryRunInput>, backoff?: Backoff) {
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Linear");
  const api = linearApi(ctx.config, input.apiKey, backoff);
  const team = (await fetchTeams(api)).find((t) => t.id === input.teamId);
  if (!team) throw notFound(`Linear team ${input.teamId}`, "listLinearTeams names the teams this key sees.");
  return { team, reader: linearReader(api, team.id, team.key.toUpperCase(), input.mapping) };
}

/** What importing the team would do, read but not written (../pipeline/dry-run.ts). */
export async function dryRunLinearImport(ctx: Ctx, raw: z.input<typeof dryRunInput>, backoff?: Backoff) {
  const { reader } = await linearSource(ctx, dryRunInput.parse(raw), backoff);
  return dryRun(ctx, reader, ["Linear's cycles, projects and customer requests are not imported; estimates are kept on the import's link (and in exports), not as a field"]);
}

/**
 * Starts an import of a Linear team into a project of the org (owners and admins): the team's
 * key is the prefix, so ENG-123 stays ENG-123. This process reads the team page by page into
 * encrypted staging, holding the key in memory for the run only; the shared pipeline applies it
 * (../pipeline, decisions 025 and 047).
 */
export async function startLinearImport(ctx: Ctx, raw: z.input<typeof startInput>, backoff?: Backoff) {
  const input = startInput.parse(raw);
  const { team, reader } = await linearSource(ctx, input, backoff);
  const { runId } = await beginImport(ctx, reader, {
    sourceId: team.id,
    prefix: team.key,
    total: team.issueCount,
    projectId: input.projectId,
    newProject: input.newProject,
    action: "import_linear",
    keep: input.keepCredential ? { credential: { token: input.apiKey }, mapping: input.mapping } : undefined,
  });
  return { runId, teamKey: team.key, total: team.issueCount };
}
