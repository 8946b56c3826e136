import { z } from "zod";
import type { Ctx } from "../../context.ts";
import { DomainError } from "../../errors.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { dryRun } from "../pipeline/dry-run.ts";
import type { RestBackoff } from "../pipeline/rest.ts";
import { keepCredentialInput } from "../pipeline/kept-credentials.ts";
import { beginImport, keylessTarget, lastImports, oneProject, sourceMappingInput } from "../pipeline/start.ts";
import { shortcutApi, type ShortcutApi } from "./client.ts";
import { epicOf, epicSourceId, fetchShortcutEpics, findShortcutEpic, shortcutEpicReader } from "./epic.ts";
import { fetchShortcutGroups, type ShortcutGroup } from "./fetch.ts";
import { shortcutReader } from "./normalize.ts";

const credentials = {
  apiToken: z.string({ error: "apiToken is required" }).trim().min(1, "apiToken is required").max(1000).describe("a Shortcut API token"),
};

export const listShortcutTeamsInput = z.object(credentials);
export const listShortcutEpicsInput = listShortcutTeamsInput;
export const findShortcutEpicInput = z.object({ ...credentials, epic: z.string({ error: "epic is required" }).trim().min(1, "epic is required").max(200).describe("an epic's id, URL or name") });
const readInput = {
  ...credentials,
  team: z.string().trim().max(200).optional().describe("the team's id, name or mention name"),
  epic: z.string().trim().max(200).optional().describe("instead of a team: an epic's id, URL or name"),
  mapping: sourceMappingInput,
};
/** A team or an epic, exactly one of them (an empty one is none). */
const oneTarget = (v: { team?: string; epic?: string }, ctx: z.RefinementCtx) => {
  if (v.team && v.epic) ctx.addIssue({ code: "custom", path: ["epic"], message: "pass team or epic, not both: an import reads one team or one epic" });
  if (!v.team && !v.epic) ctx.addIssue({ code: "custom", path: ["team"], message: "team is required, or instead epic: a team's id, name or mention name, or an epic's id, URL or name" });
};
export const dryRunShortcutInput = z.object(readInput).superRefine(oneTarget);
/** Shortcut has no project key: a new project is given its prefix, and stories and epics take its next numbers. */
export const startShortcutInput = z
  .object({ ...readInput, ...keylessTarget("the team's or epic's name"), ...keepCredentialInput })
  .superRefine(oneTarget)
  .refine(...oneProject);

const teamOf = (g: ShortcutGroup) => ({ id: g.id, name: g.name, mentionName: g.mention_name, issueCount: g.num_stories ?? 0 });

/** The Shortcut teams the token sees, each with its story count and when it was last imported into this org. */
export async function listShortcutTeams(ctx: Ctx, raw: z.input<typeof listShortcutTeamsInput>, backoff?: RestBackoff) {
  const input = listShortcutTeamsInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Shortcut");
  const groups = await fetchShortcutGroups(shortcutApi(ctx.config, input.apiToken, backoff));
  const last = await lastImports(ctx, "shortcut");
  return groups.map((g) => ({ ...teamOf(g), lastImportAt: last(g.id) }));
}

/** The epics the token sees (archived ones left out), each with its story count and when it was last imported into this org. */
export async function listShortcutEpics(ctx: Ctx, raw: z.input<typeof listShortcutEpicsInput>, backoff?: RestBackoff) {
  const input = listShortcutEpicsInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Shortcut");
  const epics = await fetchShortcutEpics(shortcutApi(ctx.config, input.apiToken, backoff));
  const last = await lastImports(ctx, "shortcut");
  return epics.filter((e) => !e.archived).map((e) => ({ ...epicOf(e), lastImportAt: last(epicSourceId(e.id)) }));
}

/**
 * The one epic an id, URL or name names, as the epics are listed (the CLI's --epic asks it before
 * its dry run or import): a name two epics have, an epic the token does not see and an archived
 * one are refused here, the one place an epic is resolved (./epic.ts).
 */
export async function findShortcutEpicToImport(ctx: Ctx, raw: z.input<typeof findShortcutEpicInput>, backoff?: RestBackoff) {
  const input = findShortcutEpicInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Shortcut");
  const epic = await findShortcutEpic(shortcutApi(ctx.config, input.apiToken, backoff), input.epic);
  const last = await lastImports(ctx, "shortcut");
  return { ...epicOf(epic), lastImportAt: last(epicSourceId(epic.id)) };
}

/** The team by id, name or mention name (with or without its @). */
async function findTeam(api: ShortcutApi, wanted: string) {
  const w = wanted.replace(/^@/, "").toLowerCase();
  const group = (await fetchShortcutGroups(api)).find((g) => g.id.toLowerCase() === w || g.name.toLowerCase() === w || g.mention_name.toLowerCase() === w);
  if (!group) throw new DomainError("NOT_FOUND", `the token sees no Shortcut team ${wanted.slice(0, 60)}`, "Listing the teams shows the ones the token sees.");
  return teamOf(group);
}

/**
 * The team or epic the token sees, as the pipeline reads it (bench/imports.ts times its reading
 * alone), with what the run is named by (`sourceId`: a team's id, or `epic:<id>`), its name and
 * the issues it counts: an epic's stories and the epic itself.
 */
export async function shortcutSource(ctx: Ctx, input: z.output<typeof dryRunShortcutInput>, backoff?: RestBackoff) {
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Shortcut");
  const api = shortcutApi(ctx.config, input.apiToken, backoff);
  if (input.epic) {
    const epic = await findShortcutEpic(api, input.epic);
    const { id, name, issueCount } = epicOf(epic);
    return { target: { sourceId: epicSourceId(epic.id), id, name, total: issueCount + 1 }, reader: shortcutEpicReader(api, epic, input.mapping) };
  }
  const team = await findTeam(api, input.team!);
  return { target: { sourceId: team.id, id: team.id, name: team.name, total: team.issueCount }, reader: shortcutReader(api, team.id, input.mapping) };
}

/** What importing the team or epic would do, read but not written (../pipeline/dry-run.ts). */
export async function dryRunShortcutImport(ctx: Ctx, raw: z.input<typeof dryRunShortcutInput>, backoff?: RestBackoff) {
  const { reader } = await shortcutSource(ctx, dryRunShortcutInput.parse(raw), backoff);
  return dryRun(ctx, reader, ["Shortcut's iterations, objectives, story types, followers, custom fields other than Priority, branches, commits and pull requests are not imported"]);
}

/**
 * Starts an import of a Shortcut team's stories and their epics, or of one epic and its stories
 * (owners and admins), into a new project (with the prefix given) or the one an earlier import
 * made; they take the project's next numbers and a second run reconciles on Shortcut's ids. The
 * token is held by this process for the run only.
 */
export async function startShortcutImport(ctx: Ctx, raw: z.input<typeof startShortcutInput>, backoff?: RestBackoff) {
  const input = startShortcutInput.parse(raw);
  const { target, reader } = await shortcutSource(ctx, input, backoff);
  const { runId } = await beginImport(ctx, reader, {
    sourceId: target.sourceId,
    prefix: "",
    total: target.total,
    projectId: input.projectId,
    newProject: input.newProject && { name: input.newProject.name || target.name.slice(0, 100), prefix: input.newProject.prefix },
    action: "import_shortcut",
    keep: input.keepCredential ? { credential: { token: input.apiToken }, mapping: input.mapping } : undefined,
  });
  return { runId, ...(input.epic ? { epicId: target.id } : { teamId: target.id }), sourceId: target.sourceId, total: target.total };
}
