import { invalidInput } from "../../errors.ts";
import type { ReadNotice } from "../pipeline/stream.ts";
import type { JiraApi } from "./client.ts";

/**
 * Reading a Jira Cloud project: its issues through the enhanced JQL search (`/rest/api/3/search/jql`,
 * paged by `nextPageToken`), ordered by creation, with the fields the import maps; an issue's
 * comments past the ones the search embeds are read with follow-up pages of
 * `/rest/api/3/issue/{id}/comment`, so nothing is cut off. A Data Center site is read through
 * REST v2 (./fetch-dc.ts) into the same shapes, its bodies wiki markup instead of ADF; ./read.ts
 * picks the reader by the site's deployment.
 */
export interface JiraUser {
  /** Cloud's id of a person; Data Center has `key` and `name` instead. */
  accountId?: string;
  key?: string;
  name?: string;
  displayName?: string;
  /** Often hidden by the person's privacy settings. */
  emailAddress?: string | null;
}
/** Atlassian Document Format: a tree of typed nodes. */
export interface AdfNode {
  type: string;
  text?: string;
  attrs?: Record<string, unknown>;
  marks?: { type: string; attrs?: Record<string, unknown> }[];
  content?: AdfNode[];
}
export interface JiraComment {
  id: string;
  author?: JiraUser | null;
  /** ADF (Cloud), wiki markup (Data Center). */
  body?: AdfNode | string | null;
  created: string;
  updated?: string;
}
export interface JiraIssueLink {
  id: string;
  type: { id?: string; name: string; inward?: string; outward?: string };
  outwardIssue?: { id: string; key: string };
  inwardIssue?: { id: string; key: string };
}
export interface JiraAttachment {
  id: string;
  filename: string;
  author?: JiraUser | null;
  created: string;
  size?: number;
  mimeType?: string;
  content: string;
}
export interface JiraIssue {
  id: string;
  key: string;
  fields: {
    summary: string;
    description?: AdfNode | string | null;
    status: { name: string; statusCategory: { key: string } };
    resolution?: { name: string } | null;
    priority?: { name: string } | null;
    duedate?: string | null;
    labels?: string[];
    components?: { id: string; name: string }[];
    issuetype?: { name: string; subtask?: boolean; hierarchyLevel?: number };
    parent?: { id: string; key: string } | null;
    issuelinks?: JiraIssueLink[];
    created: string;
    updated: string;
    resolutiondate?: string | null;
    statuscategorychangedate?: string | null;
    creator?: JiraUser | null;
    reporter?: JiraUser | null;
    assignee?: JiraUser | null;
    comment?: { comments: JiraComment[]; total: number; startAt?: number; maxResults?: number };
    attachment?: JiraAttachment[];
  };
}
export interface JiraPage {
  issues: JiraIssue[];
  next: string | null;
}

export const JIRA_ISSUES_PER_PAGE = 100;
export const JIRA_COMMENTS_PER_PAGE = 100;
export const JIRA_FIELDS = [
  "summary", "description", "status", "resolution", "priority", "duedate", "labels", "components", "issuetype", "parent", "issuelinks",
  "created", "updated", "resolutiondate", "statuscategorychangedate", "creator", "reporter", "assignee", "comment", "attachment",
];

/** JQL for a project by key; the key is checked to be one (letters, digits, underscore), so nothing else reaches the query. */
export function projectJql(projectKey: string): string {
  if (!/^[A-Z][A-Z0-9_]{0,49}$/i.test(projectKey)) throw invalidInput(`projectKey: ${projectKey.slice(0, 60)} is not a Jira project key`, "A key is letters, digits and underscores, as ENG in ENG-12.");
  return `project = "${projectKey}" ORDER BY created ASC, key ASC`;
}

export async function fetchJiraPage(api: JiraApi, projectKey: string, cursor: string | null, notice?: ReadNotice): Promise<JiraPage> {
  const page = await api.call(
    (c) => c.issueSearch.searchForIssuesUsingJqlEnhancedSearch<{ issues?: JiraIssue[]; nextPageToken?: string | null; isLast?: boolean }>({ jql: projectJql(projectKey), nextPageToken: cursor ?? undefined, maxResults: JIRA_ISSUES_PER_PAGE, fields: JIRA_FIELDS }),
    notice,
  );
  const issues = page.issues ?? [];
  for (const issue of issues) {
    const thread = issue.fields.comment;
    if (!thread || thread.comments.length >= thread.total) continue;
    const all: JiraComment[] = [];
    for (let startAt = 0; startAt < thread.total; ) {
      const more = await api.call((c) => c.issueComments.getComments<{ comments: JiraComment[]; total: number }>({ issueIdOrKey: issue.id, startAt, maxResults: JIRA_COMMENTS_PER_PAGE, orderBy: "created" }), notice);
      if (more.comments.length === 0) break;
      all.push(...more.comments);
      startAt += more.comments.length;
    }
    issue.fields.comment = { comments: all, total: all.length };
  }
  const next = page.nextPageToken && page.isLast !== true && issues.length > 0 ? page.nextPageToken : null;
  return { issues, next };
}

export interface JiraProject {
  id: string;
  key: string;
  name: string;
  issueCount: number;
}

/** The projects the account sees, each with its issue count (Jira's approximate count). */
export async function fetchJiraProjects(api: JiraApi): Promise<JiraProject[]> {
  const projects: JiraProject[] = [];
  for (let startAt = 0; ; ) {
    const page = await api.call((c) => c.projects.searchProjects<{ values: { id: string; key: string; name: string }[]; isLast?: boolean; total?: number }>({ startAt, maxResults: 50 }));
    for (const p of page.values) projects.push({ id: p.id, key: p.key, name: p.name, issueCount: 0 });
    startAt += page.values.length;
    if (page.isLast !== false || page.values.length === 0) break;
  }
  for (const p of projects) p.issueCount = await countJiraIssues(api, p.key);
  return projects;
}

/** One project by key, with its issue count. */
export async function fetchJiraProject(api: JiraApi, projectKey: string): Promise<JiraProject> {
  const p = await api.call((c) => c.projects.getProject<{ id: string; key: string; name: string }>({ projectIdOrKey: projectKey }));
  return { id: p.id, key: p.key, name: p.name, issueCount: await countJiraIssues(api, p.key) };
}

export async function countJiraIssues(api: JiraApi, projectKey: string): Promise<number> {
  return (await api.call((c) => c.issueSearch.countIssues<{ count: number }>({ jql: projectJql(projectKey) }))).count;
}
