import type { ReadNotice } from "../pipeline/stream.ts";
import type { JiraApi } from "./client.ts";
import { fetchDcPage, fetchDcProject, fetchDcProjects, type DcRun } from "./fetch-dc.ts";
import { fetchJiraPage, fetchJiraProject, fetchJiraProjects, type JiraPage, type JiraProject } from "./fetch.ts";

/** A Jira site read by its deployment: Cloud through REST v3 (./fetch.ts), Data Center through REST v2 (./fetch-dc.ts). */
export const readJiraPage = (api: JiraApi, projectKey: string, cursor: string | null, dc: DcRun, notice?: ReadNotice): Promise<JiraPage> =>
  api.deployment === "dataCenter" ? fetchDcPage(api, projectKey, cursor, dc, notice) : fetchJiraPage(api, projectKey, cursor, notice);

export const readJiraProjects = (api: JiraApi): Promise<JiraProject[]> => (api.deployment === "dataCenter" ? fetchDcProjects(api) : fetchJiraProjects(api));

export const readJiraProject = (api: JiraApi, projectKey: string): Promise<JiraProject> => (api.deployment === "dataCenter" ? fetchDcProject(api, projectKey) : fetchJiraProject(api, projectKey));
