import { z } from "zod";
import type { Ctx } from "../../context.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { dryRun } from "../pipeline/dry-run.ts";
import type { RestBackoff } from "../pipeline/rest.ts";
import { keepCredentialInput } from "../pipeline/kept-credentials.ts";
import { beginImport, keylessTarget, lastImports, oneProject, sourceMappingInput } from "../pipeline/start.ts";
import { asanaApi } from "./client.ts";
import { asanaProjectGid, fetchAsanaProject, fetchAsanaProjects } from "./fetch.ts";
import { asanaReader } from "./normalize.ts";

const credentials = {
  accessToken: z.string({ error: "accessToken is required" }).trim().min(1, "accessToken is required").max(1000).describe("an Asana personal access token"),
};

export const listAsanaProjectsInput = z.object(credentials);
export const dryRunAsanaInput = z.object({
  ...credentials,
  projectGid: z.string({ error: "projectGid is required" }).trim().min(1, "projectGid is required").max(500).describe("the Asana project's gid, or its URL"),
  mapping: sourceMappingInput,
});
/** Asana has no project key: a new project is given its prefix, and tasks take its next numbers. */
export const startAsanaInput = dryRunAsanaInput.extend({ ...keylessTarget("the Asana project's name"), ...keepCredentialInput }).refine(...oneProject);

/** The Asana projects of every workspace the token sees, each with when it was last imported into this org. */
export async function listAsanaProjects(ctx: Ctx, raw: z.input<typeof listAsanaProjectsInput>, backoff?: RestBackoff) {
  const input = listAsanaProjectsInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Asana");
  const projects = await fetchAsanaProjects(asanaApi(ctx.config, input.accessToken, backoff));
  const last = await lastImports(ctx, "asana");
  return projects.map((p) => ({ ...p, lastImportAt: last(p.id) }));
}

/** The project the token sees, as the pipeline reads it (bench/imports.ts times its reading alone). */
export async function asanaSource(ctx: Ctx, input: z.output<typeof dryRunAsanaInput>, backoff?: RestBackoff) {
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Asana");
  const gid = asanaProjectGid(input.projectGid);
  const api = asanaApi(ctx.config, input.accessToken, backoff);
  const project = await fetchAsanaProject(api, gid);
  return { project, reader: asanaReader(api, project.id, input.mapping) };
}

/** What importing the project would do, read but not written (../pipeline/dry-run.ts). */
export async function dryRunAsanaImport(ctx: Ctx, raw: z.input<typeof dryRunAsanaInput>, backoff?: RestBackoff) {
  const { reader } = await asanaSource(ctx, dryRunAsanaInput.parse(raw), backoff);
  return dryRun(ctx, reader, ["Asana's followers, likes, custom fields other than Priority, start dates and system stories (the task's activity) are not imported"]);
}

/**
 * Starts an import of an Asana project (owners and admins) into a new project (with the prefix
 * given) or the one an earlier import made; tasks take the project's next numbers and a second
 * run reconciles on the tasks' gids. The token is held by this process for the run only.
 */
export async function startAsanaImport(ctx: Ctx, raw: z.input<typeof startAsanaInput>, backoff?: RestBackoff) {
  const input = startAsanaInput.parse(raw);
  const { project, reader } = await asanaSource(ctx, input, backoff);
  const { runId } = await beginImport(ctx, reader, {
    sourceId: project.id,
    prefix: "",
    total: project.issueCount,
    projectId: input.projectId,
    newProject: input.newProject && { name: input.newProject.name || project.name.slice(0, 100), prefix: input.newProject.prefix },
    action: "import_asana",
    keep: input.keepCredential ? { credential: { token: input.accessToken }, mapping: input.mapping } : undefined,
  });
  return { runId, projectGid: project.id, total: project.issueCount };
}
