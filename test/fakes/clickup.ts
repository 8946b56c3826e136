import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ClickUpAttachment, ClickUpComment, ClickUpList, ClickUpStatus, ClickUpTask, ClickUpUser } from "../../server/transfer/clickup/fetch.ts";
import { scriptedFailures, sendJson, type ScriptedFailures } from "./scripted-failures.ts";

/**
 * A local stand-in for ClickUp's REST API v2 (https://api.clickup.com/api/v2, the shapes of
 * ClickUp's API reference): the personal token as the whole `Authorization` header (401 with an
 * `ECODE` otherwise); `GET /team` (Workspaces with their members), `/team/{id}/space`,
 * `/space/{id}`, `/space/{id}/list` (folderless Lists), `/space/{id}/folder` (Folders with their
 * Lists), `/list/{id}`, `/list/{id}/task` (100 a `page`, `last_page`; subtasks only with
 * `subtasks=true`, closed ones only with `include_closed=true`; no attachments), `/task/{id}` (the
 * whole task), `/task/{id}/comment` (newest first, 25 at a time before `start`/`start_id`),
 * `/comment/{id}/reply`. Uploads are served from this host to the token, as ClickUp's attachment
 * host does. A scripted request is answered with a 429 (with X-RateLimit-Reset, as ClickUp sends)
 * or a 5xx.
 */
export interface FakeClickUpWorkspace {
  team: { id: string; name: string };
  members: ClickUpUser[];
  space: { id: string; name: string; statuses: ClickUpStatus[] };
  /** The folderless List the tests import, a Folder's List, and an empty one. */
  list: ClickUpList;
  folderList: ClickUpList;
  emptyList: ClickUpList;
  tasks: ClickUpTask[];
  comments: Map<string, ClickUpComment[]>;
  replies: Map<string, ClickUpComment[]>;
}

export interface FakeClickUp extends ScriptedFailures {
  /** The API base, for CLICKUP_API_URL. */
  url: string;
  origin: string;
  token: string;
  workspace: FakeClickUpWorkspace;
  /** Uploaded files' bytes by attachment id. */
  files: Map<string, Buffer>;
  fileRequests: { path: string; withToken: boolean }[];
  close(): Promise<void>;
}

export const CLICKUP_TASKS_PER_PAGE = 100;

export function generateClickUpWorkspace({ tasks: count = 130, inFolder = 12, seed = 7 }: { tasks?: number; inFolder?: number; seed?: number } = {}): FakeClickUpWorkspace {
  let state = seed;
  const rand = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  const members: ClickUpUser[] = Array.from({ length: 5 }, (_, n) => ({ id: 81000 + n, username: `ClickUp Person ${n}`, email: n % 3 === 2 ? null : `cu.person${n}@clickup-customer.example`, color: "#7b68ee", initials: `P${n}`, profilePicture: null }));
  const statuses: ClickUpStatus[] = [
    { status: "to do", type: "open", color: "#d3d3d3", orderindex: 0 },
    { status: "in progress", type: "custom", color: "#4194f6", orderindex: 1 },
    { status: "review", type: "custom", color: "#a875ff", orderindex: 2 },
    { status: "won't do", type: "custom", color: "#aaaaaa", orderindex: 3 },
    { status: "shipped", type: "done", color: "#6bc950", orderindex: 4 },
    { status: "complete", type: "closed", color: "#6bc950", orderindex: 5 },
  ];
  const team = { id: "9012345678", name: "Acme" };
  const space = { id: "90120000001", name: "Product", statuses };
  const listOf = (id: string, name: string, folder: { id: string; name: string; hidden: boolean }): ClickUpList => ({ id, name, task_count: 0, archived: false, space: { id: space.id, name: space.name }, folder });
  const list = listOf("901200000101", "Roadmap", { id: "90120000050", name: "hidden", hidden: true });
  const folderList = listOf("901200000102", "Incidents", { id: "90120000051", name: "Ops", hidden: false });
  const emptyList = listOf("901200000103", "Someday", { id: "90120000051", name: "Ops", hidden: false });
  const at = (n: number, minutes = 0) => String(Date.UTC(2025, 4, 1) + n * 3_600_000 + minutes * 60_000);
  const tasks: ClickUpTask[] = [];
  const comments = new Map<string, ClickUpComment[]>();
  const replies = new Map<string, ClickUpComment[]>();
  let commentId = 90000000;
  const taskId = (n: number) => `86a${n.toString(36).padStart(5, "0")}`;
  const make = (n: number, home: ClickUpList) => {
    const id = taskId(n);
    const st = statuses[Math.floor(rand() * statuses.length)]!;
    const closed = st.type === "done" || st.type === "closed";
    const thread: ClickUpComment[] = [];
    const many = n === 7 ? 31 : n % 4;
    for (let c = 0; c < many; c++) {
      const cid = String(commentId++);
      const hasReplies = n % 10 === 3 && c === 0;
      thread.push({ id: cid, comment_text: `Comment ${c} on ${id} with **bold**`, user: members[(n + c) % members.length]!, date: at(n, c + 1), reply_count: hasReplies ? 2 : 0, resolved: false });
      if (hasReplies) replies.set(cid, [0, 1].map((r) => ({ id: String(commentId++), comment_text: `Reply ${r} to ${cid}`, user: members[(n + r + 1) % members.length]!, date: at(n, 50 + r), reply_count: 0 })));
    }
    // The API answers newest first.
    comments.set(id, thread.reverse());
    const attachments: ClickUpAttachment[] = [
      ...(n % 6 === 0 ? [{ id: `a${n}-0000-4000.png`, date: Number(at(n, 7)), title: `design-${n}.png`, extension: "png", url: `https://t9012345678.p.clickup-attachments.com/t9012345678/a${n}/design-${n}.png`, size: 3000, user: members[n % members.length]! }] : []),
      ...(n % 12 === 0 ? [{ id: `g${n}-0000-4000`, date: Number(at(n, 8)), title: `Spec ${n}`, url: `https://docs.google.com/document/d/${n}/edit`, user: members[0]! }] : []),
    ];
    const priority = n % 9 === 0 ? null : ([["1", "urgent"], ["2", "high"], ["3", "normal"], ["4", "low"]] as const)[n % 4]!;
    tasks.push({
      id,
      custom_id: null,
      name: n % 50 === 0 ? `<img src=x onerror=alert(${n})> Hostile ${n}` : `Task ${n}`,
      text_content: n % 2 ? `Description of ${id}, a link` : "",
      description: n % 2 ? `Description of ${id}, a link` : "",
      markdown_description: n % 50 === 0 ? "<script>alert(1)</script>\n\n[click](javascript:alert(2))" : n % 2 ? `Description of ${id}, [a link](https://example.com/${n})` : "",
      status: st,
      date_created: at(n),
      date_updated: at(n, 30),
      date_closed: closed ? at(n, 40) : null,
      date_done: st.type === "done" ? at(n, 39) : null,
      archived: false,
      creator: members[n % members.length]!,
      assignees: n % 2 ? [members[(n + 2) % members.length]!] : [],
      tags: [...(n % 3 === 0 ? [{ name: "frontend", tag_fg: "#ffffff", tag_bg: "#1F8DE0" }] : []), ...(n % 4 === 1 ? [{ name: "tech debt", tag_fg: "#800000", tag_bg: "" }] : [])],
      parent: null,
      priority: priority ? { id: priority[0], priority: priority[1], color: "#f50000", orderindex: priority[0] } : null,
      due_date: n % 4 === 0 ? String(Date.UTC(2026, n % 9, 10 + (n % 10), 4)) : null,
      start_date: st.type === "custom" ? at(n, 20) : null,
      points: n % 5 === 0 ? 3 : null,
      checklists: n % 5 === 1 ? [{ id: `c${n}`, name: "Release", items: [{ id: `c${n}-1`, name: "Write the test", resolved: true }, { id: `c${n}-2`, name: "Ship it", resolved: false }] }] : [],
      dependencies: [],
      linked_tasks: [],
      list: { id: home.id, name: home.name },
      space: { id: space.id },
      url: `https://app.clickup.com/t/${id}`,
      attachments,
    });
  };
  for (let n = 1; n <= count; n++) make(n, list);
  for (let n = count + 1; n <= count + inFolder; n++) make(n, folderList);
  // Subtasks, two levels deep: every 8th task under the one before it, every 24th under its parent's parent too.
  for (let n = 8; n < count; n += 8) tasks[n]!.parent = tasks[n - 1]!.id;
  for (let n = 24; n < count; n += 24) tasks[n - 1]!.parent = tasks[n - 2]!.id;
  // Dependencies and links as ClickUp shows them: on both tasks.
  for (let n = 2; n < count; n += 5) {
    const dep = { task_id: tasks[n - 1]!.id, depends_on: tasks[n]!.id, date_created: tasks[n]!.date_created, userid: String(members[0]!.id) };
    tasks[n]!.dependencies!.push({ ...dep, type: 1 });
    tasks[n - 1]!.dependencies!.push({ ...dep, type: 0 });
  }
  for (let n = 6; n + 1 < count; n += 7) {
    const link = { task_id: tasks[n]!.id, link_id: tasks[n + 1]!.id, date_created: tasks[n]!.date_created, userid: String(members[0]!.id) };
    tasks[n]!.linked_tasks!.push(link);
    tasks[n + 1]!.linked_tasks!.push({ ...link, task_id: tasks[n + 1]!.id, link_id: tasks[n]!.id });
  }
  list.task_count = count;
  folderList.task_count = inFolder;
  return { team, members, space, list, folderList, emptyList, tasks, comments, replies };
}

/** A task as the List's endpoint gives it: without attachments. */
const slim = ({ attachments, ...rest }: ClickUpTask) => rest;

export async function startFakeClickUp({ workspace = generateClickUpWorkspace() }: { workspace?: FakeClickUpWorkspace } = {}): Promise<FakeClickUp> {
  const token = `pk_${81000}_${crypto.randomUUID().replaceAll("-", "").toUpperCase()}`;
  const failing = scriptedFailures((res, reply) =>
    reply.status === 429 ? json(res, 429, { err: "Rate limit reached", ECODE: "APP_002" }, { "x-ratelimit-limit": "100", "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + reply.retryAfterSeconds) }) : json(res, reply.status, { err: "Internal Server Error", ECODE: "APP_001" }),
  );
  const fake: FakeClickUp = {
    requests: failing.requests,
    failAt: failing.failAt,
    get failures() {
      return failing.failures;
    },
    url: "",
    origin: "",
    token,
    workspace,
    files: new Map(),
    fileRequests: [],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => sendJson(res, status, body, headers, "application/json; charset=utf-8");
  const notFound = (res: http.ServerResponse) => json(res, 404, { err: "Not found", ECODE: "ITEM_013" });
  const server = http.createServer(async (req, res) => {
    for await (const _ of req);
    const url = new URL(req.url ?? "/", "http://fake");
    const file = /^\/t9012345678\/([^/]+)\/[^/]+$/.exec(url.pathname);
    if (req.method === "GET" && file) {
      fake.fileRequests.push({ path: url.pathname, withToken: req.headers.authorization === token });
      const bytes = [...fake.files.entries()].find(([id]) => id.startsWith(`${file[1]}-`))?.[1];
      if (!bytes) return notFound(res);
      res.writeHead(200, { "content-type": "image/png", "content-length": String(bytes.length) });
      return void res.end(bytes);
    }
    if (failing.answer(req, url, res)) return;
    if (req.headers.authorization !== token) return json(res, 401, { err: "Token invalid", ECODE: "OAUTH_025" });
    const w = fake.workspace;
    const path = url.pathname.replace(/^\/api\/v2/, "");
    if (req.method !== "GET") return notFound(res);
    const lists = [w.list, w.folderList, w.emptyList];
    if (path === "/team") return json(res, 200, { teams: [{ ...w.team, color: "#7b68ee", avatar: null, members: w.members.map((user) => ({ user: { ...user, role: 3 } })) }] });
    const spaceBody = () => ({ ...w.space, private: false, multiple_assignees: true, archived: false, features: { due_dates: { enabled: true }, tags: { enabled: true }, priorities: { enabled: true } } });
    if (path === `/team/${w.team.id}/space`) return json(res, 200, { spaces: [spaceBody()] });
    if (path === `/space/${w.space.id}`) return json(res, 200, spaceBody());
    if (path === `/space/${w.space.id}/list`) return json(res, 200, { lists: lists.filter((l) => l.folder!.hidden).map((l) => ({ ...l, statuses: w.space.statuses })) });
    if (path === `/space/${w.space.id}/folder`) return json(res, 200, { folders: [{ id: w.folderList.folder!.id, name: "Ops", orderindex: 0, hidden: false, space: w.list.space, task_count: String(w.folderList.task_count), lists: lists.filter((l) => !l.folder!.hidden) }] });
    const listPath = /^\/list\/([0-9]+)(\/task)?$/.exec(path);
    if (listPath) {
      const l = lists.find((x) => x.id === listPath[1]);
      if (!l) return notFound(res);
      if (!listPath[2]) return json(res, 200, { ...l, statuses: w.space.statuses, permission_level: "create" });
      const page = Number(url.searchParams.get("page") ?? 0);
      if (!Number.isInteger(page) || page < 0) return json(res, 400, { err: "Page must be a number", ECODE: "INPUT_005" });
      const all = w.tasks.filter((t) => t.list!.id === l.id && (url.searchParams.get("subtasks") === "true" || !t.parent) && (url.searchParams.get("include_closed") === "true" || t.status.type !== "closed"));
      const got = all.slice(page * CLICKUP_TASKS_PER_PAGE, (page + 1) * CLICKUP_TASKS_PER_PAGE);
      return json(res, 200, { tasks: got.map(slim), last_page: (page + 1) * CLICKUP_TASKS_PER_PAGE >= all.length });
    }
    const taskPath = /^\/task\/([0-9a-z]+)(\/comment)?$/.exec(path);
    if (taskPath) {
      const t = w.tasks.find((x) => x.id === taskPath[1]);
      if (!t) return notFound(res);
      if (!taskPath[2]) return json(res, 200, t);
      const thread = w.comments.get(t.id) ?? [];
      const startId = url.searchParams.get("start_id");
      const from = startId ? thread.findIndex((c) => c.id === startId) + 1 : 0;
      return json(res, 200, { comments: thread.slice(from, from + 25) });
    }
    const reply = /^\/comment\/([0-9]+)\/reply$/.exec(path);
    if (reply) return json(res, 200, { comments: w.replies.get(reply[1]!) ?? [] });
    return notFound(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.url = `${fake.origin}/api/v2`;
  // Uploads are served from this server (as ClickUp's attachment host), so their urls name it.
  for (const t of workspace.tasks) {
    for (const a of t.attachments ?? []) {
      if (!a.url.startsWith("https://t9012345678.p.clickup-attachments.com")) continue;
      a.url = a.url.replace("https://t9012345678.p.clickup-attachments.com", fake.origin);
      fake.files.set(a.id, Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc((a.size ?? 100) - 8, a.id.length % 251)]));
    }
  }
  return fake;
}
