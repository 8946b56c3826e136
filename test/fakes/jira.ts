import http from "node:http";
import type { AddressInfo } from "node:net";
import type { AdfNode, JiraAttachment, JiraComment, JiraIssue, JiraUser } from "../../server/transfer/jira/fetch.ts";
import { asDataCenter, dataCenterRoute } from "./jira-dc.ts";
import { scriptedFailures, sendJson, type ScriptedFailures } from "./scripted-failures.ts";

/**
 * A local stand-in for Jira Cloud's REST v3 (the shapes of Atlassian's API reference and
 * jira.js's models): `GET /rest/api/3/project/search` (startAt pages with isLast),
 * `GET /rest/api/3/project/{key}`, `POST /rest/api/3/search/approximate-count`,
 * `GET /rest/api/3/search/jql` (nextPageToken pages; at most 20 comments embedded per issue, as
 * Jira does, with `total` telling there are more) and `GET /rest/api/3/issue/{id}/comment`. It
 * checks HTTP Basic auth (email:token), serves attachment content (below), and answers a scripted request with a 429 carrying
 * Retry-After or with a 503. The project is generated and mutable, so a test can change it.
 * `/rest/api/2/serverInfo` answers anyone with the deployment type, uncounted by `failAt`. With
 * `deployment: "dataCenter"` it is a Data Center site instead (./jira-dc.ts): REST v2, a personal
 * access token as a Bearer (`apiToken`), wiki markup bodies, the Epic Link field.
 */
export interface FakeJiraProject {
  id: string;
  key: string;
  name: string;
  users: JiraUser[];
  issues: JiraIssue[];
}

export interface FakeJira extends ScriptedFailures {
  url: string;
  deployment: "cloud" | "dataCenter";
  /** Cloud's account email (a Data Center site takes none). */
  email: string;
  /** Cloud: the account's API token; Data Center: a personal access token. */
  apiToken: string;
  project: FakeJiraProject;
  /**
   * Attachment content by attachment id, served at `/rest/api/3/attachment/content/{id}` to the
   * account's Basic auth: with `redirect=false` the bytes, otherwise a 303 to a media host, as
   * Jira Cloud does. Every generated attachment has bytes here (a PDF of its `size`); a test may
   * replace or delete them. Not counted by `failAt`, which scripts the API's answers.
   */
  files: Map<string, Buffer>;
  /** Requests for attachment content: path with query, whether they carried the credentials. */
  fileRequests: { path: string; withCredentials: boolean }[];
  close(): Promise<void>;
}

/** A PDF's header then filler: `size` bytes an attachment's content can be checked against. */
export function fakeFileBytes(id: string, size: number): Buffer {
  const head = Buffer.from(`%PDF-1.4\n% attachment ${id}\n`);
  const out = Buffer.alloc(Math.max(size, head.length), 0x41 + (Number(id) % 26));
  head.copy(out);
  return out;
}

const EMBEDDED_COMMENTS = 20;

const doc = (...content: AdfNode[]): AdfNode => ({ type: "doc", content } as AdfNode);
const para = (...content: AdfNode[]): AdfNode => ({ type: "paragraph", content });
const text = (t: string, marks?: AdfNode["marks"]): AdfNode => ({ type: "text", text: t, ...(marks ? { marks } : {}) });

/** The hostile description every 50th issue carries: what the import must neither crash on nor pass on as markup. */
export function hostileAdf(): AdfNode {
  let deep: AdfNode = para(text("bottom"));
  for (let i = 0; i < 400; i++) deep = { type: "blockquote", content: [deep] };
  return doc(
    para(text("<script>alert(1)</script><img src=x onerror=alert(2)>")),
    para(text("click", [{ type: "link", attrs: { href: "javascript:alert(3)" } }]), text(" and "), text("data", [{ type: "link", attrs: { href: "data:text/html,<script>alert(4)</script>" } }])),
    { type: "heading", attrs: { level: 99 }, content: [text("Huge heading")] },
    { type: "heading", content: [text("No attrs")] },
    { type: "codeBlock", attrs: { language: "js\n<script>" }, content: [text("```\n</code><script>alert(5)</script>")] },
    { type: "panel", attrs: { panelType: "info" }, content: [para(text("Inside a panel"), { type: "mention", attrs: { id: "x", text: "@Ada" } })] },
    { type: "mediaSingle", content: [{ type: "media", attrs: { id: "m", type: "file" } }] },
    { type: "unknownFutureNode", content: [para(text("future text"))] },
    deep,
  );
}

export function generateJiraProject({ issues: count = 300, key = "JRA", seed = 7 }: { issues?: number; key?: string; seed?: number } = {}): FakeJiraProject {
  let state = seed;
  const rand = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  const users: JiraUser[] = Array.from({ length: 6 }, (_, n) => ({ accountId: `5b10ac8d82e05b22cc7d4e${n}`, displayName: `Jira Person ${n}`, emailAddress: n % 3 === 2 ? null : `jira.person${n}@jira-customer.example` }));
  const statuses = [
    { name: "To Do", statusCategory: { key: "new" } },
    { name: "In Progress", statusCategory: { key: "indeterminate" } },
    { name: "In Review", statusCategory: { key: "indeterminate" } },
    { name: "Done", statusCategory: { key: "done" } },
  ];
  const priorities = ["Highest", "High", "Medium", "Low", "Lowest"];
  const at = (n: number, minutes = 0) => new Date(Date.UTC(2025, 0, 1) + n * 3_600_000 + minutes * 60_000).toISOString().replace("Z", "+0000");
  const list: JiraIssue[] = [];
  for (let n = 1; n <= count; n++) {
    const id = String(10000 + n);
    const epic = n % 25 === 1;
    const status = statuses[Math.floor(rand() * statuses.length)]!;
    const wontDo = status.name === "Done" && n % 7 === 0;
    const parent = epic ? null : n % 5 === 0 ? list[n - 2] : n % 25 > 1 && n % 3 === 0 ? list[Math.floor((n - 1) / 25) * 25] : null;
    const comments: JiraComment[] = Array.from({ length: n % 40 === 0 ? 45 : n % 4 }, (_, c) => ({
      id: `${id}${String(c).padStart(3, "0")}`,
      author: users[(n + c) % users.length]!,
      body: doc(para(text(`Comment ${c} on ${key}-${n} with `), text("bold", [{ type: "strong" }]))),
      created: at(n, c + 1),
      updated: at(n, c + 1),
    }));
    const attachments: JiraAttachment[] = n % 6 === 0 ? [{ id: `2${id}`, filename: `spec-${n}.pdf`, author: users[n % users.length]!, created: at(n, 5), size: 1234, mimeType: "application/pdf", content: `https://jira.example/rest/api/3/attachment/content/2${id}` }] : [];
    list.push({
      id,
      key: `${key}-${n}`,
      fields: {
        summary: n % 50 === 0 ? `<img src=x onerror=alert(${n})> Hostile ${n}` : `Issue ${n}`,
        description: n % 50 === 0 ? hostileAdf() : n % 2 ? doc(para(text(`Description of ${key}-${n}, `), text("a link", [{ type: "link", attrs: { href: `https://example.com/${n}` } }]))) : null,
        status,
        resolution: status.name === "Done" ? { name: wontDo ? "Won't Do" : "Done" } : null,
        priority: n % 9 === 0 ? null : { name: priorities[n % priorities.length]! },
        duedate: n % 4 === 0 ? `2026-0${1 + (n % 9)}-1${n % 10}` : null,
        labels: n % 3 === 0 ? ["backend", `l${n % 4}`] : [],
        components: n % 5 === 0 ? [{ id: "100", name: "API" }] : [],
        issuetype: epic ? { name: "Epic", subtask: false, hierarchyLevel: 1 } : n % 5 === 0 ? { name: "Sub-task", subtask: true, hierarchyLevel: -1 } : { name: "Task", subtask: false, hierarchyLevel: 0 },
        parent: parent ? { id: parent.id, key: parent.key } : null,
        issuelinks: [],
        created: at(n),
        updated: at(n, 30),
        resolutiondate: status.name === "Done" ? at(n, 50) : null,
        statuscategorychangedate: at(n, 20),
        creator: users[n % users.length]!,
        reporter: users[(n + 1) % users.length]!,
        assignee: n % 2 ? users[(n + 2) % users.length]! : null,
        comment: { comments, total: comments.length, startAt: 0, maxResults: comments.length },
        attachment: attachments,
      },
    });
  }
  // Links, as Jira shows them: on both issues, outward on one side and inward on the other.
  let linkId = 30000;
  const link = (from: JiraIssue, to: JiraIssue, type: { name: string; inward: string; outward: string }) => {
    const id = String(linkId++);
    from.fields.issuelinks!.push({ id, type, outwardIssue: { id: to.id, key: to.key } });
    to.fields.issuelinks!.push({ id, type, inwardIssue: { id: from.id, key: from.key } });
  };
  for (let n = 2; n < list.length; n += 3) link(list[n]!, list[n - 1]!, { name: "Blocks", inward: "is blocked by", outward: "blocks" });
  for (let n = 10; n < list.length; n += 20) link(list[n]!, list[n - 9]!, { name: "Duplicate", inward: "is duplicated by", outward: "duplicates" });
  for (let n = 4; n + 1 < list.length; n += 11) link(list[n]!, list[n + 1]!, { name: "Relates", inward: "relates to", outward: "relates to" });
  return { id: "10001", key, name: `Project ${key}`, users, issues: list };
}

export async function startFakeJira({ project: generated = generateJiraProject(), deployment = "cloud" }: { project?: FakeJiraProject; deployment?: "cloud" | "dataCenter" } = {}): Promise<FakeJira> {
  const project = deployment === "dataCenter" ? asDataCenter(generated) : generated;
  const email = "owner@jira-customer.example";
  const apiToken = deployment === "dataCenter" ? `NjQ${Math.random().toString(36).slice(2)}fakePAT` : `ATATT3x-fake-${Math.random().toString(36).slice(2)}`;
  const expected = deployment === "dataCenter" ? `Bearer ${apiToken}` : `Basic ${Buffer.from(`${email}:${apiToken}`).toString("base64")}`;
  const failing = scriptedFailures((res, reply) => (reply.status === 429 ? json(res, 429, { errorMessages: ["Rate limit exceeded."] }, { "retry-after": String(reply.retryAfterSeconds) }) : json(res, reply.status, { errorMessages: ["Service unavailable"] })));
  const fake: FakeJira = {
    requests: failing.requests,
    failAt: failing.failAt,
    get failures() {
      return failing.failures;
    },
    url: "",
    deployment,
    email,
    apiToken,
    project,
    files: new Map(),
    fileRequests: [],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => sendJson(res, status, body, headers, "application/json;charset=UTF-8");
  const server = http.createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const url = new URL(req.url ?? "/", "http://fake");
    if (req.method === "GET" && url.pathname === "/rest/api/2/serverInfo") {
      return json(res, 200, { baseUrl: fake.url, version: deployment === "dataCenter" ? "9.12.2" : "1001.0.0-SNAPSHOT", versionNumbers: deployment === "dataCenter" ? [9, 12, 2] : [1001, 0, 0], deploymentType: deployment === "dataCenter" ? "DataCenter" : "Cloud", buildNumber: 100221, serverTitle: "Jira" });
    }
    const content = (deployment === "dataCenter" ? /^\/secure\/attachment\/([^/]+)\/[^/]+$/ : /^\/rest\/api\/3\/attachment\/content\/([^/]+)$/).exec(url.pathname);
    if (req.method === "GET" && content) {
      fake.fileRequests.push({ path: `${url.pathname}${url.search}`, withCredentials: req.headers.authorization === expected });
      if (req.headers.authorization !== expected) return json(res, 401, { errorMessages: ["You are not authenticated."] });
      const bytes = fake.files.get(content[1]!);
      if (!bytes) return json(res, 404, { errorMessages: ["The attachment with id does not exist"] });
      if (url.searchParams.get("redirect") !== "false") {
        res.writeHead(303, { location: `https://api.media.atlassian.example/file/${content[1]}/binary?token=media-token` });
        return void res.end();
      }
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(bytes.length) });
      return void res.end(bytes);
    }
    if (failing.answer(req, url, res)) return;
    if (req.headers.authorization !== expected) return json(res, 401, { errorMessages: ["You are not authenticated. Authentication required to perform this operation."] });
    const p = fake.project;
    const path = url.pathname;
    if (deployment === "dataCenter") {
      if (!dataCenterRoute(p, url, req, res, json)) json(res, 404, { errorMessages: [`No route for ${req.method} ${path}`] });
      return;
    }
    if (req.method === "GET" && path === "/rest/api/3/project/search") {
      const startAt = Number(url.searchParams.get("startAt") ?? 0);
      const values = startAt === 0 ? [{ id: p.id, key: p.key, name: p.name, projectTypeKey: "software", self: `${fake.url}/rest/api/3/project/${p.id}` }, { id: "10002", key: "OTHER", name: "Other", projectTypeKey: "business" }] : [];
      return json(res, 200, { self: `${fake.url}${path}`, maxResults: 50, startAt, total: 2, isLast: true, values });
    }
    const projectMatch = /^\/rest\/api\/3\/project\/([^/]+)$/.exec(path);
    if (req.method === "GET" && projectMatch) {
      const key = decodeURIComponent(projectMatch[1]!);
      if (key === p.key || key === p.id) return json(res, 200, { id: p.id, key: p.key, name: p.name, projectTypeKey: "software" });
      if (key === "OTHER") return json(res, 200, { id: "10002", key: "OTHER", name: "Other", projectTypeKey: "business" });
      return json(res, 404, { errorMessages: ["No project could be found with key '" + key + "'."] });
    }
    const keyOf = (jql: string) => /^project = "([A-Z0-9_]+)"/i.exec(jql)?.[1];
    if (req.method === "POST" && path === "/rest/api/3/search/approximate-count") {
      const key = keyOf(JSON.parse(body || "{}").jql ?? "");
      return json(res, 200, { count: key === p.key ? p.issues.length : 0 });
    }
    if (req.method === "GET" && path === "/rest/api/3/search/jql") {
      const key = keyOf(url.searchParams.get("jql") ?? "");
      if (!key) return json(res, 400, { errorMessages: ["Error in the JQL Query"] });
      const all = key === p.key ? p.issues : [];
      const max = Math.min(Number(url.searchParams.get("maxResults") ?? 50), 100);
      const token = url.searchParams.get("nextPageToken");
      const from = token ? Number(Buffer.from(token, "base64url").toString()) : 0;
      const slice = all.slice(from, from + max).map((i) => {
        const copy = structuredClone(i);
        const thread = copy.fields.comment!;
        copy.fields.comment = { comments: thread.comments.slice(0, EMBEDDED_COMMENTS), total: thread.comments.length, startAt: 0, maxResults: EMBEDDED_COMMENTS };
        return copy;
      });
      const more = from + max < all.length;
      return json(res, 200, { issues: slice, ...(more ? { nextPageToken: Buffer.from(String(from + max)).toString("base64url") } : {}), isLast: !more });
    }
    const commentMatch = /^\/rest\/api\/3\/issue\/([^/]+)\/comment$/.exec(path);
    if (req.method === "GET" && commentMatch) {
      const issue = p.issues.find((i) => i.id === commentMatch[1] || i.key === commentMatch[1]);
      if (!issue) return json(res, 404, { errorMessages: ["Issue does not exist or you do not have permission to see it."] });
      const startAt = Number(url.searchParams.get("startAt") ?? 0);
      const max = Math.min(Number(url.searchParams.get("maxResults") ?? 50), 100);
      const comments = issue.fields.comment!.comments;
      return json(res, 200, { startAt, maxResults: max, total: comments.length, comments: comments.slice(startAt, startAt + max) });
    }
    return json(res, 404, { errorMessages: [`No route for ${req.method} ${path}`] });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Jira serves content from the site itself: the generated urls name this server.
  for (const issue of project.issues) {
    for (const a of issue.fields.attachment ?? []) {
      a.content = a.content.replace("https://jira.example", fake.url);
      fake.files.set(a.id, fakeFileBytes(a.id, a.size ?? 0));
    }
  }
  return fake;
}
