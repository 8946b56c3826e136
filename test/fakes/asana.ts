import http from "node:http";
import type { AddressInfo } from "node:net";
import type { AsanaAttachment, AsanaStory, AsanaTask, AsanaUser } from "../../server/transfer/asana/fetch.ts";
import { scriptedFailures, sendJson, type ScriptedFailures } from "./scripted-failures.ts";

/**
 * A local stand-in for Asana's REST API (https://app.asana.com/api/1.0, the shapes of Asana's
 * API reference): `{data}` answers, lists paged by `limit` (1–100, else 400) and an opaque
 * `offset` with `next_page: {offset, path, uri}`; a personal access token as a Bearer (401 with
 * `{errors: [{message}]}` otherwise); `GET /workspaces`, `/projects?workspace=`, `/projects/{gid}`,
 * `/projects/{gid}/task_counts`, `/projects/{gid}/tasks`, `/tasks/{gid}/subtasks`,
 * `/tasks/{gid}/stories`, `/attachments?parent=` and `/attachments/{gid}` (a `download_url`
 * signed for two minutes, served by this server as Asana's storage would, without the token).
 * A scripted request is answered with a 429 carrying Retry-After, or a 503. The project is
 * generated and mutable, so a test can change it.
 */
export interface FakeAsanaProject {
  gid: string;
  name: string;
  workspace: { gid: string; name: string };
  users: AsanaUser[];
  sections: { gid: string; name: string }[];
  /** Top-level tasks in the project's order. */
  tasks: AsanaTask[];
  /** Subtasks by their parent's gid. */
  subtasks: Map<string, AsanaTask[]>;
  stories: Map<string, AsanaStory[]>;
  attachments: Map<string, AsanaAttachment[]>;
}

export interface FakeAsana extends ScriptedFailures {
  /** The API base, for ASANA_API_URL. */
  url: string;
  origin: string;
  token: string;
  project: FakeAsanaProject;
  /** Bytes of the files Asana stores, by attachment gid. */
  files: Map<string, Buffer>;
  /** Downloads of stored files: path, and whether the token came along (it must not). */
  fileRequests: { path: string; withToken: boolean }[];
  close(): Promise<void>;
}

/** Every task of the project, subtasks after their parents, depth first. */
export function allAsanaTasks(p: FakeAsanaProject): AsanaTask[] {
  const out: AsanaTask[] = [];
  const visit = (t: AsanaTask) => {
    out.push(t);
    for (const s of p.subtasks.get(t.gid) ?? []) visit(s);
  };
  p.tasks.forEach(visit);
  return out;
}

export function asanaFileBytes(gid: string, size: number): Buffer {
  const head = Buffer.from(`%PDF-1.4\n% asana attachment ${gid}\n`);
  const out = Buffer.alloc(Math.max(size, head.length), 0x61 + (Number(gid.slice(-3)) % 26));
  head.copy(out);
  return out;
}

export function generateAsanaProject({ tasks: count = 200, seed = 11 }: { tasks?: number; seed?: number } = {}): FakeAsanaProject {
  let state = seed;
  const rand = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  const users: AsanaUser[] = Array.from({ length: 5 }, (_, n) => ({ gid: `12000000000000${n}`, name: `Asana Person ${n}`, email: n % 3 === 2 ? null : `asana.person${n}@asana-customer.example` }));
  const sections = [
    { gid: "1100000000000001", name: "To do" },
    { gid: "1100000000000002", name: "In Progress" },
    { gid: "1100000000000003", name: "Review" },
    { gid: "1100000000000004", name: "Won't do" },
  ];
  const project = { gid: "1000000000000001", name: "Launch plan", workspace: { gid: "1000000000000000", name: "Acme" } };
  const priorities = ["Urgent", "High", "Medium", "Low"];
  const at = (n: number, minutes = 0) => new Date(Date.UTC(2025, 2, 1) + n * 3_600_000 + minutes * 60_000).toISOString();
  const stories = new Map<string, AsanaStory[]>();
  const attachments = new Map<string, AsanaAttachment[]>();
  const subtasks = new Map<string, AsanaTask[]>();
  let storyGid = 1600000000000000;
  let attachmentGid = 1500000000000000;
  const make = (gid: string, n: number, inProject: boolean, title: string): AsanaTask => {
    const section = sections[Math.floor(rand() * sections.length)]!;
    const completed = n % 5 === 0;
    const priority = n % 9 === 0 ? null : priorities[n % priorities.length]!;
    const comments = n % 40 === 0 ? 120 : n % 4;
    stories.set(gid, [
      { gid: String(storyGid++), type: "system", resource_subtype: "added_to_project", text: `added to ${project.name}`, created_at: at(n, 0), created_by: users[n % users.length]! },
      ...Array.from({ length: comments }, (_, c) => ({ gid: String(storyGid++), type: "comment", resource_subtype: "comment_added", text: `Comment ${c} on task ${n}`, ...(c % 2 === 0 ? { html_text: `<body>Comment <em>${c}</em> on task ${n}</body>` } : {}), created_at: at(n, c + 1), created_by: users[(n + c) % users.length]! })),
    ]);
    const files: AsanaAttachment[] = [];
    if (n % 6 === 0) {
      const a = String(attachmentGid++);
      files.push({ gid: a, name: `spec-${n}.pdf`, host: "asana", resource_subtype: "asana", size: 2048, created_at: at(n, 5), permanent_url: `https://app.asana.com/app/asana/-/get_asset?asset_id=${a}`, view_url: `https://asana-user-private.example/assets/${a}` });
    }
    if (n % 12 === 0) {
      const a = String(attachmentGid++);
      files.push({ gid: a, name: `Plan ${n}`, host: "gdrive", resource_subtype: "gdrive", size: null, created_at: at(n, 6), permanent_url: `https://app.asana.com/app/asana/-/get_asset?asset_id=${a}`, view_url: `https://drive.google.com/file/d/${a}/view` });
    }
    attachments.set(gid, files);
    return {
      gid,
      name: n % 50 === 0 ? `<img src=x onerror=alert(${n})> Hostile ${n}` : title,
      resource_subtype: "default_task",
      notes: n % 50 === 0 ? `<script>alert(1)</script> [click](javascript:alert(2)) x` : n % 2 ? `Notes of ${title}\nstep one\nstep two` : "",
      // Asana's rich text: the text a person typed is escaped; the markup is Asana's (and, in the hostile task, an attacker's).
      html_notes:
        n % 50 === 0
          ? `<body>&lt;script&gt;alert(1)&lt;/script&gt; [click](javascript:alert(2)) <a href="javascript:alert(3)">x</a><script>alert(4)</script><img src=x onerror="alert(5)"></body>`
          : n % 2
            ? `<body>Notes of <strong>${title}</strong>\n<ul><li>step one</li><li>step <a href="https://example.com/${n}">two</a></li></ul></body>`
            : "<body></body>",
      completed,
      completed_at: completed ? at(n, 50) : null,
      created_at: at(n),
      modified_at: at(n, 30),
      due_on: n % 4 === 0 ? `2026-0${1 + (n % 9)}-1${n % 10}` : null,
      due_at: n % 4 !== 0 && n % 7 === 0 ? `2026-05-0${1 + (n % 9)}T15:00:00.000Z` : null,
      assignee: n % 2 ? users[(n + 2) % users.length]! : null,
      created_by: users[n % users.length]!,
      tags: [...(n % 3 === 0 ? [{ gid: "1700000000000001", name: "backend", color: "dark-blue" }] : []), ...(n % 4 === 1 ? [{ gid: "1700000000000002", name: "ux", color: null }] : [])],
      memberships: inProject ? [{ project: { gid: project.gid }, section }] : [],
      parent: null,
      custom_fields: [{ gid: "1800000000000001", name: "Priority", resource_subtype: "enum", enum_value: priority ? { gid: `18000000000001${priorities.indexOf(priority)}`, name: priority } : null, display_value: priority }],
      dependencies: [],
      dependents: [],
      num_subtasks: 0,
      permalink_url: `https://app.asana.com/0/${project.gid}/${gid}`,
    };
  };
  const tasks: AsanaTask[] = [];
  let sub = 1400000000000000;
  for (let n = 1; n <= count; n++) {
    const task = make(String(1300000000000000 + n), n, true, `Task ${n}`);
    tasks.push(task);
    if (n % 10 === 1) {
      const children = [1, 2].map((k) => ({ ...make(String(sub++), n + k * 1000, false, `Subtask ${k} of task ${n}`), parent: { gid: task.gid } }));
      subtasks.set(task.gid, children);
      task.num_subtasks = children.length;
      if (n % 30 === 1) {
        const grandchild = { ...make(String(sub++), n + 5000, false, `Sub-subtask of task ${n}`), parent: { gid: children[0]!.gid } };
        subtasks.set(children[0]!.gid, [grandchild]);
        children[0]!.num_subtasks = 1;
      }
    }
  }
  // Dependencies, as Asana shows them: on both tasks, a dependency on one side and a dependent on the other.
  const depend = (blocked: AsanaTask, blocker: AsanaTask) => {
    blocked.dependencies!.push({ gid: blocker.gid });
    blocker.dependents!.push({ gid: blocked.gid });
  };
  for (let n = 2; n < tasks.length; n += 6) depend(tasks[n]!, tasks[n - 1]!);
  for (const [parent, children] of subtasks) {
    const top = tasks.find((t) => t.gid === parent);
    if (top && tasks.indexOf(top) > 3) depend(children[0]!, tasks[tasks.indexOf(top) - 3]!);
  }
  return { ...project, users, sections, tasks, subtasks, stories, attachments };
}

const MAX_LIMIT = 100;

export async function startFakeAsana({ project = generateAsanaProject() }: { project?: FakeAsanaProject } = {}): Promise<FakeAsana> {
  const token = `2/1200000000000000/1209${Math.random().toString().slice(2, 12)}:${Math.random().toString(36).slice(2)}`;
  const signatures = new Map<string, string>();
  const failing = scriptedFailures((res, reply) => (reply.status === 429 ? error(res, 429, "You have made too many requests recently. Please, be chill.", { "retry-after": String(reply.retryAfterSeconds) }) : error(res, reply.status, "Server Error")));
  const fake: FakeAsana = {
    requests: failing.requests,
    failAt: failing.failAt,
    get failures() {
      return failing.failures;
    },
    url: "",
    origin: "",
    token,
    project,
    files: new Map(),
    fileRequests: [],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => sendJson(res, status, body, headers, "application/json; charset=UTF-8");
  const error = (res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}) => json(res, status, { errors: [{ message, help: "For more information on API status codes and how to handle them, read the docs on errors: https://developers.asana.com/docs/errors" }] }, headers);
  /** A list answered a page at a time, the offset an opaque token as Asana's are. */
  const list = (res: http.ServerResponse, url: URL, all: unknown[]) => {
    // As Asana, the rich text only when opt_fields asks for it.
    const asked = new Set((url.searchParams.get("opt_fields") ?? "").split(","));
    const items = all.map((item) => {
      const { html_notes, html_text, ...rest } = item as { html_notes?: string; html_text?: string };
      return { ...rest, ...(asked.has("html_notes") && html_notes !== undefined ? { html_notes } : {}), ...(asked.has("html_text") && html_text !== undefined ? { html_text } : {}) };
    });
    const limit = Number(url.searchParams.get("limit") ?? 20);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return error(res, 400, "limit: Value must be between 1 and 100");
    const offset = url.searchParams.get("offset");
    const from = offset ? Number(Buffer.from(offset, "base64url").toString()) : 0;
    if (!Number.isInteger(from) || from < 0) return error(res, 400, "offset: Your pagination token is invalid.");
    const more = from + limit < items.length;
    const next = Buffer.from(String(from + limit)).toString("base64url");
    const path = `${url.pathname.replace(/^\/api\/1\.0/, "")}?limit=${limit}&offset=${next}`;
    return json(res, 200, { data: items.slice(from, from + limit), next_page: more ? { offset: next, path, uri: `${fake.url}${path}` } : null });
  };
  const server = http.createServer(async (req, res) => {
    for await (const _ of req);
    const url = new URL(req.url ?? "/", "http://fake");
    const stored = /^\/storage\/assets\/([0-9]+)$/.exec(url.pathname);
    if (req.method === "GET" && stored) {
      fake.fileRequests.push({ path: url.pathname, withToken: Boolean(req.headers.authorization) });
      const gid = stored[1]!;
      if (!signatures.has(gid) || url.searchParams.get("X-Amz-Signature") !== signatures.get(gid)) return void res.writeHead(403, { "content-type": "application/xml" }).end("<Error><Code>AccessDenied</Code></Error>");
      const bytes = fake.files.get(gid);
      if (!bytes) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(bytes.length) });
      return void res.end(bytes);
    }
    if (failing.answer(req, url, res)) return;
    if (req.headers.authorization !== `Bearer ${token}`) return error(res, 401, "Not Authorized");
    const path = url.pathname.replace(/^\/api\/1\.0/, "");
    const p = fake.project;
    const projectRecord = { gid: p.gid, resource_type: "project", name: p.name, workspace: { gid: p.workspace.gid, resource_type: "workspace", name: p.workspace.name } };
    if (req.method !== "GET") return error(res, 404, "No matching route for request");
    if (path === "/workspaces") return list(res, url, [{ gid: p.workspace.gid, resource_type: "workspace", name: p.workspace.name }]);
    if (path === "/projects") {
      if (!url.searchParams.get("workspace")) return error(res, 400, "workspace: Missing input");
      return list(res, url, url.searchParams.get("workspace") === p.workspace.gid ? [projectRecord, { gid: "1000000000000002", resource_type: "project", name: "Empty board" }] : []);
    }
    const projectMatch = /^\/projects\/([0-9]+)(\/task_counts|\/tasks)?$/.exec(path);
    if (projectMatch) {
      const [, gid, rest] = projectMatch;
      const empty = gid === "1000000000000002";
      if (gid !== p.gid && !empty) return error(res, 404, "project: Unknown object: " + gid);
      if (rest === "/task_counts") return json(res, 200, { data: { num_tasks: empty ? 0 : p.tasks.length } });
      if (rest === "/tasks") return list(res, url, empty ? [] : p.tasks);
      return json(res, 200, { data: empty ? { ...projectRecord, gid, name: "Empty board" } : projectRecord });
    }
    const taskMatch = /^\/tasks\/([0-9]+)\/(subtasks|stories)$/.exec(path);
    if (taskMatch) {
      const [, gid, what] = taskMatch;
      if (!p.stories.has(gid!)) return error(res, 404, "task: Unknown object: " + gid);
      return list(res, url, what === "subtasks" ? (p.subtasks.get(gid!) ?? []) : p.stories.get(gid!)!);
    }
    if (path === "/attachments") {
      const parent = url.searchParams.get("parent");
      if (!parent) return error(res, 400, "parent: Missing input");
      if (!p.attachments.has(parent)) return error(res, 404, "parent: Unknown object: " + parent);
      return list(res, url, p.attachments.get(parent)!.map(({ download_url: _, ...a }) => ({ ...a, resource_type: "attachment" })));
    }
    const attachmentMatch = /^\/attachments\/([0-9]+)$/.exec(path);
    if (attachmentMatch) {
      const gid = attachmentMatch[1]!;
      const a = [...p.attachments.values()].flat().find((x) => x.gid === gid);
      if (!a) return error(res, 404, "attachment: Unknown object: " + gid);
      // A fresh signature each time, as Asana's download urls are.
      const signature = Math.random().toString(36).slice(2);
      signatures.set(gid, signature);
      const download = a.host === "asana" ? `${fake.origin}/storage/assets/${gid}?X-Amz-Expires=120&X-Amz-Signature=${signature}` : null;
      return json(res, 200, { data: { ...a, resource_type: "attachment", download_url: download } });
    }
    return error(res, 404, "No matching route for request");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.url = `${fake.origin}/api/1.0`;
  for (const files of project.attachments.values()) for (const a of files) if (a.host === "asana") fake.files.set(a.gid, asanaFileBytes(a.gid, a.size ?? 0));
  return fake;
}
