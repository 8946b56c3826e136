import { z } from "zod";
import type { Ctx } from "../../context.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { dryRun } from "../pipeline/dry-run.ts";
import { keepCredentialInput } from "../pipeline/kept-credentials.ts";
import { beginImport, lastImports, oneProject, projectTarget, sourceMappingInput } from "../pipeline/start.ts";
import { jiraApi, type JiraBackoff } from "./client.ts";
import { projectJql } from "./fetch.ts";
import { readJiraProject, readJiraProjects } from "./read.ts";
import { jiraReader } from "./normalize.ts";

const credentials = {
  site: z.string({ error: "site is required" }).trim().min(1, "site is required").max(500).describe("the Jira site's URL, https://your-team.atlassian.net"),
  email: z.string().trim().max(320).optional().describe("Jira Cloud: the Atlassian account's email; Data Center: none"),
  apiToken: z.string({ error: "apiToken is required" }).trim().min(1, "apiToken is required").max(1000).describe("Jira Cloud: an API token; Data Center: a personal access token"),
};
export const listJiraProjectsInput = z.object(credentials);
export const dryRunJiraInput = z.object({
  ...credentials,
  projectKey: z.string({ error: "projectKey is required" }).trim().min(1, "projectKey is required").max(50),
  mapping: sourceMappingInput,
});
export const startJiraInput = dryRunJiraInput.extend({ ...projectTarget, ...keepCredentialInput }).refine(...oneProject);

/** The Jira projects the account sees, each with when it was last imported into this org. */
export async function listJiraProjects(ctx: Ctx, raw: z.input<typeof listJiraProjectsInput>, backoff?: JiraBackoff) {
  const input = listJiraProjectsInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Jira");
  const projects = await readJiraProjects(await jiraApi(ctx.config, input, backoff));
  const last = await lastImports(ctx, "jira");
  return projects.map((p) => ({ ...p, lastImportAt: last(p.key) }));
}

/** The project the account sees, as the pipeline reads it (bench/imports.ts times its reading alone). */
export async function jiraSource(ctx: Ctx, input: z.output<typeof dryRunJiraInput>, backoff?: JiraBackoff) {
  requireRole(await actorOf(ctx), ["owner", "admin"], "importing from Jira");
  projectJql(input.projectKey);
  const api = await jiraApi(ctx.config, input, backoff);
  const project = await readJiraProject(api, input.projectKey);
  return { project, reader: jiraReader(api, project.key, input.mapping) };
}

/** What importing the project would do, read but not written (../pipeline/dry-run.ts). */
export async function dryRunJiraImport(ctx: Ctx, raw: z.input<typeof dryRunJiraInput>, backoff?: JiraBackoff) {
  const { reader } = await jiraSource(ctx, dryRunJiraInput.parse(raw), backoff);
  return dryRun(ctx, reader, ["Jira's sprints, worklogs, watchers, votes and custom fields are not imported"]);
}

/**
 * Starts an import of a Jira project (owners and admins) into a new project taking its key, or
 * the one an earlier import made: ENG-12 stays ENG-12. The credentials are held by this process
 * for the run only (../pipeline/start.ts); the site URL passes the outbound guard first.
 */
export async function startJiraImport(ctx: Ctx, raw: z.input<typeof startJiraInput>, backoff?: JiraBackoff) {
  const input = startJiraInput.parse(raw);
  const { project, reader } = await jiraSource(ctx, input, backoff);
  const { runId } = await beginImport(ctx, reader, {
    sourceId: project.key,
    prefix: project.key,
    total: project.issueCount,
    projectId: input.projectId,
    newProject: input.newProject,
    action: "import_jira",
    keep: input.keepCredential ? { credential: { token: input.apiToken, site: input.site, ...(input.email ? { email: input.email } : {}) }, mapping: input.mapping } : undefined,
  });
  return { runId, projectKey: project.key, total: project.issueCount };
}
