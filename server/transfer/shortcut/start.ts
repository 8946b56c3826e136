import { z } from "zod";
import type { Ctx } from "../../context.ts";
import { DomainError } from "../../errors.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { dryRun } from "../pipeline/dry-run.ts";
import type { RestBackoff } from "../pipeline/rest.ts";
import { keepCredentialInput } from "../pipeline/kept-credentials.ts";
import { beginImport, keylessTarget, lastImports, oneProject, sourceMappingInput } from "../pipeline/start.ts";
import { shortcutApi, type ShortcutApi } from "./client.ts";
import { fetchShortcutGroups, type ShortcutGroup } from "./fetch.ts";
import { shortcutReader } from "./normalize.ts";

const credentials = {
  apiToken: z.string({ error: "apiToken is required" }).trim().min(1, "apiToken is required").max(1000).describe("a Shortcut API token"),
};

export const listShortcutTeamsInput = z.object(credentials);
export const dryRunShortcutInput = z.object({
  ...credentials,
  team: z.string({ error: "team is required" }).trim().min(1, "team is required").max(200).describe("the team's id, name or mention name"),
  mapping: sourceMappingInput,
});
/** Shortcut has no project key: a new project is given its prefix, and stories and epics take its next numbers. */
export const startShortcutInput = dryRunShortcutInput.extend({ ...keylessTarget("the team's name"), ...keepCredentialInput }).refine(...oneProject);

const teamOf = (g: ShortcutGroup) => ({ id: g.id, name: g.name, mentionName: g.mention_name, issueCount: g.num_stories ?? 0 });

/** The Shortcut teams the token sees, each with its story count and when it was last imported into this org. */
export async function listShortcutTeams(ctx: Ctx, raw: z.input<typeof listShortcutTeamsInput>, backoff?: RestBackoff) {
  const input = listShortcutTeamsInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Shortcut");
  const groups = await fetchShortcutGroups(shortcutApi(ctx.config, input.apiToken, backoff));
  const last = await lastImports(ctx, "shortcut");
  return groups.map((g) => ({ ...teamOf(g), lastImportAt: last(g.id) }));
}

/** The team by id, name or mention name (with or without its @). */
async function findTeam(api: ShortcutApi, wanted: string) {
  const w = wanted.replace(/^@/, "").toLowerCase();
  const group = (await fetchShortcutGroups(api)).find((g) => g.id.toLowerCase() === w || g.name.toLowerCase() === w || g.mention_name.toLowerCase() === w);
  if (!group) throw new DomainError("NOT_FOUND", `the token sees no Shortcut team ${wanted.slice(0, 60)}`, "Listing the teams shows the ones the token sees.");
  return teamOf(group);
}

/** The team the token sees, as the pipeline reads it (bench/imports.ts times its reading alone). */
export async function shortcutSource(ctx: Ctx, input: z.output<typeof dryRunShortcutInput>, backoff?: RestBackoff) {
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Shortcut");
  const api = shortcutApi(ctx.config, input.apiToken, backoff);
  const team = await findTeam(api, input.team);
  return { team, reader: shortcutReader(api, team.id, input.mapping) };
}

/** What importing the team would do, read but not written (../pipeline/dry-run.ts). */
export async function dryRunShortcutImport(ctx: Ctx, raw: z.input<typeof dryRunShortcutInput>, backoff?: RestBackoff) {
  const { reader } = await shortcutSource(ctx, dryRunShortcutInput.parse(raw), backoff);
  return dryRun(ctx, reader, ["Shortcut's iterations, objectives, story types, followers, custom fields other than Priority, branches, commits and pull requests are not imported"]);
}

/**
 * Starts an import of a Shortcut team's stories and their epics (owners and admins) into a new
 * project (with the prefix given) or the one an earlier import made; they take the project's
 * next numbers and a second run reconciles on Shortcut's ids. The token is held by this process
 * for the run only.
 */
export async function startShortcutImport(ctx: Ctx, raw: z.input<typeof startShortcutInput>, backoff?: RestBackoff) {
  const input = startShortcutInput.parse(raw);
  const { team, reader } = await shortcutSource(ctx, input, backoff);
  const { runId } = await beginImport(ctx, reader, {
    sourceId: team.id,
    prefix: "",
    total: team.issueCount,
    projectId: input.projectId,
    newProject: input.newProject && { name: input.newProject.name || team.name.slice(0, 100), prefix: input.newProject.prefix },
    action: "import_shortcut",
    keep: input.keepCredential ? { credential: { token: input.apiToken }, mapping: input.mapping } : undefined,
  });
  return { runId, teamId: team.id, total: team.issueCount };
}
