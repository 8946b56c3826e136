import type http from "node:http";
import type { JiraIssue, JiraUser } from "../../server/transfer/jira/fetch.ts";

/**
 * The Data Center side of the local Jira (./jira.ts, `deployment: "dataCenter"`): REST v2 shapes
 * of Atlassian's Jira Server/DC reference and jira.js's v2 models. People have a `key` and a
 * `name` (no accountId), bodies are wiki markup, an epic's issues name it by the Epic Link custom
 * field (its key), attachments are served at `/secure/attachment/{id}/{name}`. Routes:
 * `GET /rest/api/2/project` (every project, no pages), `/rest/api/2/project/{key}`,
 * `/rest/api/2/search` (`startAt`/`maxResults`, `total`; 20 comments embedded at most),
 * `/rest/api/2/issue/{idOrKey}`, `/rest/api/2/issue/{id}/comment`, `/rest/api/2/field`.
 */
export const EPIC_LINK_FIELD = "customfield_10101";
const EMBEDDED_COMMENTS = 20;

interface Project {
  id: string;
  key: string;
  name: string;
  users: JiraUser[];
  issues: JiraIssue[];
}

/** The hostile wiki body every 50th issue carries. */
export const HOSTILE_WIKI = "<script>alert(1)</script><img src=x onerror=alert(2)>\n[click|javascript:alert(3)] and [data|data:text/html,<script>alert(4)</script>]\nh9. Not a heading\n{code:js<script>}\n```\n</code><script>alert(5)</script>\n{code}\n{panel:title=Note}\nInside a panel, [~ada]\n{panel}\n!evil.png|onerror=alert(6)!\n" + "bq. deep\n".repeat(200);

/** A Cloud project of ./jira.ts as a Data Center site holds it. */
export function asDataCenter(project: Project): Project {
  const users = project.users.map((u, n) => ({ key: `JIRAUSER1010${n}`, name: `person${n}`, displayName: u.displayName, emailAddress: u.emailAddress }));
  const userOf = (u: JiraUser | null | undefined) => (u ? users[project.users.findIndex((x) => x.accountId === u.accountId)]! : null);
  const epics = new Set(project.issues.filter((i) => i.fields.issuetype?.name === "Epic").map((i) => i.id));
  for (const issue of project.issues) {
    const f = issue.fields as JiraIssue["fields"] & Record<string, unknown>;
    const n = Number(issue.key.split("-")[1]);
    f.description = n % 50 === 0 ? HOSTILE_WIKI : f.description ? `Description of ${issue.key}, [a link|https://example.com/${n}]\n* one\n* two` : null;
    for (const c of f.comment?.comments ?? []) {
      c.body = `Comment ${c.id.slice(-3).replace(/^0+(?=\d)/, "")} on ${issue.key} with *bold*`;
      c.author = userOf(c.author);
    }
    for (const a of f.attachment ?? []) {
      a.author = userOf(a.author);
      a.content = `https://jira.example/secure/attachment/${a.id}/${a.filename}`;
    }
    f.creator = userOf(f.creator);
    f.reporter = userOf(f.reporter);
    f.assignee = userOf(f.assignee);
    f.statuscategorychangedate = null;
    delete f.issuetype?.hierarchyLevel;
    // An epic's issues name it by the Epic Link field; sub-tasks keep their parent.
    if (f.parent && epics.has(f.parent.id)) {
      f[EPIC_LINK_FIELD] = f.parent.key;
      f.parent = null;
    }
  }
  return { ...project, users };
}

/** Answers a Data Center route, or returns false. */
export function dataCenterRoute(project: Project, url: URL, req: http.IncomingMessage, res: http.ServerResponse, json: (res: http.ServerResponse, status: number, body: unknown) => void): boolean {
  if (req.method !== "GET") return false;
  const path = url.pathname;
  const p = project;
  const projectBody = { id: p.id, key: p.key, name: p.name, projectTypeKey: "software" };
  const keyOf = (jql: string) => /^project = "([A-Z0-9_]+)"/i.exec(jql)?.[1];
  const issueOf = (idOrKey: string) => p.issues.find((i) => i.id === idOrKey || i.key === idOrKey);
  if (path === "/rest/api/2/project") return json(res, 200, [projectBody, { id: "10002", key: "OTHER", name: "Other", projectTypeKey: "business" }]), true;
  const projectMatch = /^\/rest\/api\/2\/project\/([^/]+)$/.exec(path);
  if (projectMatch) {
    const key = decodeURIComponent(projectMatch[1]!);
    if (key === p.key || key === p.id) return json(res, 200, projectBody), true;
    return json(res, 404, { errorMessages: [`No project could be found with key '${key}'.`], errors: {} }), true;
  }
  if (path === "/rest/api/2/field") {
    return json(res, 200, [{ id: "summary", name: "Summary", custom: false, schema: { type: "string", system: "summary" } }, { id: EPIC_LINK_FIELD, name: "Epic Link", custom: true, schema: { type: "any", custom: "com.pyxis.greenhopper.jira:gh-epic-link", customId: 10101 } }, { id: "customfield_10102", name: "Story Points", custom: true, schema: { type: "number", custom: "com.atlassian.jira.plugin.system.customfieldtypes:float" } }]), true;
  }
  if (path === "/rest/api/2/search") {
    const key = keyOf(url.searchParams.get("jql") ?? "");
    if (!key) return json(res, 400, { errorMessages: ["Error in the JQL Query"], errors: {} }), true;
    const all = key === p.key ? p.issues : [];
    const startAt = Number(url.searchParams.get("startAt") ?? 0);
    const max = Math.min(Number(url.searchParams.get("maxResults") ?? 50), 100);
    const wanted = new Set((url.searchParams.get("fields") ?? "").split(","));
    const issues = all.slice(startAt, startAt + max).map((i) => {
      const copy = structuredClone(i) as JiraIssue & { fields: Record<string, unknown> };
      for (const k of Object.keys(copy.fields)) if (!wanted.has(k)) delete copy.fields[k];
      const thread = i.fields.comment!;
      if (copy.fields.comment) copy.fields.comment = { comments: thread.comments.slice(0, EMBEDDED_COMMENTS), total: thread.comments.length, startAt: 0, maxResults: EMBEDDED_COMMENTS };
      return { expand: "operations,editmeta,changelog,renderedFields", id: copy.id, self: `${url.origin}/rest/api/2/issue/${copy.id}`, key: copy.key, fields: copy.fields };
    });
    return json(res, 200, { expand: "schema,names", startAt, maxResults: max, total: all.length, issues }), true;
  }
  const commentMatch = /^\/rest\/api\/2\/issue\/([^/]+)\/comment$/.exec(path);
  if (commentMatch) {
    const issue = issueOf(commentMatch[1]!);
    if (!issue) return json(res, 404, { errorMessages: ["Issue Does Not Exist"], errors: {} }), true;
    const startAt = Number(url.searchParams.get("startAt") ?? 0);
    const max = Math.min(Number(url.searchParams.get("maxResults") ?? 50), 100);
    const comments = issue.fields.comment!.comments;
    return json(res, 200, { startAt, maxResults: max, total: comments.length, comments: comments.slice(startAt, startAt + max) }), true;
  }
  const issueMatch = /^\/rest\/api\/2\/issue\/([^/]+)$/.exec(path);
  if (issueMatch) {
    const issue = issueOf(decodeURIComponent(issueMatch[1]!));
    if (!issue) return json(res, 404, { errorMessages: ["Issue Does Not Exist"], errors: {} }), true;
    return json(res, 200, { id: issue.id, key: issue.key, self: `${url.origin}/rest/api/2/issue/${issue.id}`, fields: { summary: issue.fields.summary } }), true;
  }
  return false;
}
