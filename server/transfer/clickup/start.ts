import { z } from "zod";
import type { Ctx } from "../../context.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { dryRun } from "../pipeline/dry-run.ts";
import type { RestBackoff } from "../pipeline/rest.ts";
import { keepCredentialInput } from "../pipeline/kept-credentials.ts";
import { beginImport, keylessTarget, lastImports, oneProject, sourceMappingInput } from "../pipeline/start.ts";
import { clickupApi } from "./client.ts";
import { clickupLocation, fetchClickUpLocations, fetchClickUpTarget } from "./fetch.ts";
import { clickupReader } from "./normalize.ts";

const credentials = {
  apiToken: z.string({ error: "apiToken is required" }).trim().min(1, "apiToken is required").max(1000).describe("a ClickUp personal API token (pk_…)"),
};

export const listClickUpLocationsInput = z.object(credentials);
export const dryRunClickUpInput = z.object({
  ...credentials,
  location: z.string({ error: "location is required" }).trim().min(1, "location is required").max(500).describe("the List's or Space's URL, list:<id> or space:<id>"),
  mapping: sourceMappingInput,
});
/** ClickUp has no project key: a new project is given its prefix, and tasks take its next numbers. */
export const startClickUpInput = dryRunClickUpInput.extend({ ...keylessTarget("the List's or Space's name"), ...keepCredentialInput }).refine(...oneProject);

/** The runs' source id: `list:<id>` or `space:<id>`. */
const sourceIdOf = (where: { kind: string; id: string }) => `${where.kind}:${where.id}`;

/** The Spaces and Lists of every Workspace the token sees, each with its task count and when it was last imported into this org. */
export async function listClickUpLocations(ctx: Ctx, raw: z.input<typeof listClickUpLocationsInput>, backoff?: RestBackoff) {
  const input = listClickUpLocationsInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from ClickUp");
  const found = await fetchClickUpLocations(clickupApi(ctx.config, input.apiToken, backoff));
  const last = await lastImports(ctx, "clickup");
  return found.map((l) => ({ ...l, location: sourceIdOf(l), lastImportAt: last(sourceIdOf(l)) }));
}

/** The List or Space the token sees, as the pipeline reads it (bench/imports.ts times its reading alone). */
export async function clickupSource(ctx: Ctx, input: z.output<typeof dryRunClickUpInput>, backoff?: RestBackoff) {
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from ClickUp");
  const where = clickupLocation(input.location);
  const api = clickupApi(ctx.config, input.apiToken, backoff);
  const target = await fetchClickUpTarget(api, where);
  return { target, reader: clickupReader(api, target, input.mapping) };
}

/** What importing the List or Space would do, read but not written (../pipeline/dry-run.ts). */
export async function dryRunClickUpImport(ctx: Ctx, raw: z.input<typeof dryRunClickUpInput>, backoff?: RestBackoff) {
  const { reader } = await clickupSource(ctx, dryRunClickUpInput.parse(raw), backoff);
  return dryRun(ctx, reader, ["ClickUp's custom fields, watchers, time tracked, start dates of tasks not in progress, docs and views are not imported; an assignee beyond the first stays behind"]);
}

/**
 * Starts an import of a ClickUp List or Space (owners and admins) into a new project (with the
 * prefix given) or the one an earlier import made; tasks take the project's next numbers and a
 * second run reconciles on the tasks' ids. The token is held by this process for the run only.
 */
export async function startClickUpImport(ctx: Ctx, raw: z.input<typeof startClickUpInput>, backoff?: RestBackoff) {
  const input = startClickUpInput.parse(raw);
  const { target, reader } = await clickupSource(ctx, input, backoff);
  const { runId } = await beginImport(ctx, reader, {
    sourceId: sourceIdOf(target),
    prefix: "",
    total: target.issueCount,
    projectId: input.projectId,
    newProject: input.newProject && { name: input.newProject.name || target.name.slice(0, 100), prefix: input.newProject.prefix },
    action: "import_clickup",
    keep: input.keepCredential ? { credential: { token: input.apiToken }, mapping: input.mapping } : undefined,
  });
  return { runId, location: sourceIdOf(target), total: target.issueCount };
}
