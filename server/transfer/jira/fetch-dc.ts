import type { ReadNotice } from "../pipeline/stream.ts";
import type { JiraApi } from "./client.ts";
import { JIRA_COMMENTS_PER_PAGE, JIRA_FIELDS, JIRA_ISSUES_PER_PAGE, projectJql, type JiraComment, type JiraIssue, type JiraPage, type JiraProject } from "./fetch.ts";

/**
 * Reading a Jira Data Center project through REST v2 (decision 074): the search by `startAt`
 * (`/rest/api/2/search`, which DC has where Cloud has the enhanced search), comments past the
 * embedded ones by `/rest/api/2/issue/{id}/comment`, projects from `/rest/api/2/project`, counts
 * from a search of no results. Bodies are wiki markup (./wiki.ts converts them). An epic's issues
 * name it by the Epic Link field (its key) rather than `parent`: the field is found once by its
 * type, and each epic key is read as its issue id once a run (from the page, else by a request).
 */
export const EPIC_LINK = "com.pyxis.greenhopper.jira:gh-epic-link";

/** What a run reads once: the Epic Link field's id (null when the site has none) and the epic ids found by key. */
export interface DcRun {
  epicField: string | null | undefined;
  epicIds: Map<string, string>;
}
export const dcRun = (): DcRun => ({ epicField: undefined, epicIds: new Map() });

export async function fetchDcPage(api: JiraApi, projectKey: string, cursor: string | null, run: DcRun, notice?: ReadNotice): Promise<JiraPage> {
  if (run.epicField === undefined) {
    const fields = await api.get<{ id: string; schema?: { custom?: string } }[]>("/rest/api/2/field", {}, notice);
    run.epicField = fields.find((f) => f.schema?.custom === EPIC_LINK)?.id ?? null;
  }
  const startAt = Number(cursor ?? 0);
  const page = await api.get<{ issues?: JiraIssue[]; total?: number }>("/rest/api/2/search", { jql: projectJql(projectKey), startAt, maxResults: JIRA_ISSUES_PER_PAGE, fields: [...JIRA_FIELDS, ...(run.epicField ? [run.epicField] : [])].join(",") }, notice);
  const issues = page.issues ?? [];
  for (const issue of issues) {
    run.epicIds.set(issue.key, issue.id);
    await allComments(api, issue, notice);
  }
  if (run.epicField) {
    for (const issue of issues) {
      const epicKey = (issue.fields as Record<string, unknown>)[run.epicField];
      if (issue.fields.parent || typeof epicKey !== "string" || !/^[A-Z][A-Z0-9_]*-\d+$/i.test(epicKey)) continue;
      if (!run.epicIds.has(epicKey)) run.epicIds.set(epicKey, (await api.get<{ id: string }>(`/rest/api/2/issue/${encodeURIComponent(epicKey)}`, { fields: "summary" }, notice)).id);
      issue.fields.parent = { id: run.epicIds.get(epicKey)!, key: epicKey };
    }
  }
  const next = issues.length > 0 && startAt + issues.length < (page.total ?? 0) ? String(startAt + issues.length) : null;
  return { issues, next };
}

/** The comments past the ones the search embedded, read in pages. */
async function allComments(api: JiraApi, issue: JiraIssue, notice?: ReadNotice) {
  const thread = issue.fields.comment;
  if (!thread || thread.comments.length >= thread.total) return;
  const all: JiraComment[] = [];
  for (let startAt = 0; startAt < thread.total; ) {
    const more = await api.get<{ comments: JiraComment[] }>(`/rest/api/2/issue/${encodeURIComponent(issue.id)}/comment`, { startAt, maxResults: JIRA_COMMENTS_PER_PAGE, orderBy: "created" }, notice);
    if (more.comments.length === 0) break;
    all.push(...more.comments);
    startAt += more.comments.length;
  }
  issue.fields.comment = { comments: all, total: all.length };
}

export async function countDcIssues(api: JiraApi, projectKey: string): Promise<number> {
  return (await api.get<{ total: number }>("/rest/api/2/search", { jql: projectJql(projectKey), maxResults: 0 })).total;
}

export async function fetchDcProjects(api: JiraApi): Promise<JiraProject[]> {
  const projects = await api.get<{ id: string; key: string; name: string }[]>("/rest/api/2/project");
  const out: JiraProject[] = [];
  for (const p of projects) out.push({ id: p.id, key: p.key, name: p.name, issueCount: await countDcIssues(api, p.key) });
  return out;
}

export async function fetchDcProject(api: JiraApi, projectKey: string): Promise<JiraProject> {
  const p = await api.get<{ id: string; key: string; name: string }>(`/rest/api/2/project/${encodeURIComponent(projectKey)}`);
  return { id: p.id, key: p.key, name: p.name, issueCount: await countDcIssues(api, p.key) };
}
