import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ShortcutComment, ShortcutEpic, ShortcutFile, ShortcutGroup, ShortcutLinkedFile, ShortcutMember, ShortcutState, ShortcutStory, ShortcutThreadedComment } from "../../server/transfer/shortcut/fetch.ts";
import { scriptedFailures, sendJson, type ScriptedFailures } from "./scripted-failures.ts";

/**
 * A local stand-in for Shortcut's REST API v3 (https://api.app.shortcut.com/api/v3, the shapes
 * of Shortcut's API reference and its client's types): the token in the `Shortcut-Token` header
 * (401 otherwise); `GET /member` (the token's member and workspace), `/members`, `/workflows`,
 * `/custom-fields` (a Priority field, canonical name `priority`), `/groups`, `/groups/{id}/stories`
 * (slim stories, `limit` up to 1000 and `offset`), `/stories/{id}` (the whole story: comments with
 * `parent_id`, files, linked files, story links on both sides, tasks), `/epics/{id}` (threaded
 * comments), `/epics/{id}/stories` (an epic's slim stories, whatever their team, unpaginated as
 * Shortcut answers it), `/epics` (every epic, slim) and `/epics/paginated` (`page` from 1,
 * `page_size` 1 to 250, default 10: `{data, next, total}`, `next` the next page's number or null);
 * an epic carries `stats.num_stories_total`. Uploaded files
 * are served from this host to the token, as Shortcut's media host does. Options add what a
 * workspace of several teams has: `elsewhere` stories in the other team (most in the team's
 * epics, linked both ways to the team's stories; one in an epic only they name; one in none),
 * `epicFiles`: uploads an epic's description and comments link to (the API lists files on
 * stories only; an epic's are the uploads its text names), and `moreEpics`: that many epics with no
 * stories (every fifth archived), so the epics' listing runs to several pages. Every workspace has
 * one archived epic (`ARCHIVED_EPIC`, "Archived epic") with no story in it.
 * A scripted request is answered with a 429 (with Retry-After) or a 503.
 */
export interface FakeShortcutWorkspace {
  slug: string;
  members: ShortcutMember[];
  workflow: { id: number; name: string; states: ShortcutState[] };
  priority: { id: string; name: string; canonical_name: string; values: { id: string; value: string }[] };
  team: ShortcutGroup;
  otherTeam: ShortcutGroup;
  /** Every team's stories (`group_id` says whose). */
  stories: ShortcutStory[];
  /** Each with the uploads its text names, which the fake serves (not part of the API's epic). */
  epics: (ShortcutEpic & { files_for_fake?: { id: number; size: number }[] })[];
}

export interface FakeShortcut extends ScriptedFailures {
  /** The API base, for SHORTCUT_API_URL. */
  url: string;
  origin: string;
  token: string;
  workspace: FakeShortcutWorkspace;
  /** Uploaded files' bytes by file id. */
  files: Map<number, Buffer>;
  fileRequests: { path: string; withToken: boolean }[];
  close(): Promise<void>;
}

/** The id of the archived epic every workspace has. */
export const ARCHIVED_EPIC = 9099;

export function generateShortcutWorkspace({ stories: count = 150, seed = 5, elsewhere = 0, epicFiles = false, moreEpics = 0 }: { stories?: number; seed?: number; elsewhere?: number; epicFiles?: boolean; moreEpics?: number } = {}): FakeShortcutWorkspace {
  let state = seed;
  const rand = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  const uuid = (n: number, kind: string) => `5f${kind.padStart(6, "0")}-0000-4000-8000-${String(n).padStart(12, "0")}`;
  const members: ShortcutMember[] = Array.from({ length: 5 }, (_, n) => ({ id: uuid(n, "aa"), disabled: false, profile: { name: `Shortcut Person ${n}`, mention_name: `person${n}`, email_address: n % 3 === 2 ? null : `sc.person${n}@shortcut-customer.example`, deactivated: false } }));
  const states: ShortcutState[] = [
    { id: 500000001, name: "Backlog", type: "backlog" },
    { id: 500000002, name: "To Do", type: "unstarted" },
    { id: 500000003, name: "In Development", type: "started" },
    { id: 500000004, name: "Ready for Review", type: "started" },
    { id: 500000005, name: "Completed", type: "done" },
  ];
  const priority = { id: uuid(1, "cf"), name: "Priority", canonical_name: "priority", values: ["Highest", "High", "Medium", "Low"].map((value, i) => ({ id: uuid(i, "cv"), value })) };
  const at = (n: number, minutes = 0) => new Date(Date.UTC(2025, 4, 1) + n * 3_600_000 + minutes * 60_000).toISOString();
  const team: ShortcutGroup = { id: uuid(1, "bb"), name: "Mobile", mention_name: "mobile", archived: false, num_stories: count };
  const otherTeam: ShortcutGroup = { id: uuid(2, "bb"), name: "Web", mention_name: "web", archived: false, num_stories: 0 };
  const epics: FakeShortcutWorkspace["epics"] = Array.from({ length: 6 }, (_, e) => ({
    id: 9000 + e,
    name: `Epic ${e}`,
    description: `What epic ${e} is for`,
    state: ["to do", "in progress", "done"][e % 3]!,
    deadline: e % 2 ? `2026-07-1${e}T12:00:00Z` : null,
    labels: [],
    owner_ids: [members[e % members.length]!.id],
    requested_by_id: members[(e + 1) % members.length]!.id,
    created_at: at(0, e),
    updated_at: at(0, e + 10),
    started_at: e % 3 ? at(0, e + 5) : null,
    completed_at: e % 3 === 2 ? at(0, e + 9) : null,
    comments: e % 2 === 0 ? [{ id: 80000 + e * 10, author_id: members[0]!.id, text: `On epic ${e}`, created_at: at(0, 20), updated_at: at(0, 20), comments: [{ id: 80001 + e * 10, author_id: members[1]!.id, text: `A reply on epic ${e}`, created_at: at(0, 21), updated_at: at(0, 21), comments: [] }] }] : [],
  }));
  let commentId = 10000;
  let fileId = 70000;
  const stories: ShortcutStory[] = [];
  for (let n = 1; n <= count; n++) {
    const id = 100 + n;
    const st = states[Math.floor(rand() * states.length)]!;
    const comments: ShortcutComment[] = [];
    for (let c = 0; c < n % 4; c++) {
      const reply = n % 10 === 3 && c === 1;
      comments.push({ id: commentId++, author_id: members[(n + c) % members.length]!.id, text: `Comment ${c} on sc-${id} with **bold**`, created_at: at(n, c + 1), updated_at: at(n, c + 1), deleted: n % 13 === 0 && c === 0, parent_id: reply ? comments[0]!.id : null });
    }
    const fid = n % 6 === 0 ? fileId++ : 0;
    const files: ShortcutFile[] = n % 6 === 0 ? [{ id: fid, name: `design-${n}.png`, filename: `design-${n}.png`, size: 3000, url: `https://media.shortcut.example/api/attachments/files/clubhouse-assets/${fid}/design-${n}.png`, uploader_id: members[n % members.length]!.id, created_at: at(n, 7) }] : [];
    const linked: ShortcutLinkedFile[] = n % 12 === 0 ? [{ id: fileId++, name: `Spec ${n}`, url: `https://docs.google.com/document/d/${n}/edit`, type: "google", uploader_id: members[0]!.id, created_at: at(n, 8) }] : [];
    const priorityValue = n % 9 === 0 ? null : priority.values[n % 4]!;
    stories.push({
      id,
      name: n % 50 === 0 ? `<img src=x onerror=alert(${n})> Hostile ${n}` : `Story ${n}`,
      description: n % 50 === 0 ? "<script>alert(1)</script>\n\n[click](javascript:alert(2))" : n % 2 ? `Description of sc-${id}, [a link](https://example.com/${n})` : "",
      story_type: ["feature", "bug", "chore"][n % 3]!,
      workflow_state_id: st.id,
      epic_id: n % 3 === 0 ? epics[(n / 3) % epics.length]!.id : null,
      group_id: team.id,
      deadline: n % 4 === 0 ? `2026-0${1 + (n % 9)}-1${n % 10}T23:00:00Z` : null,
      estimate: n % 5 === 0 ? 3 : null,
      archived: n % 17 === 0,
      labels: [...(n % 3 === 0 ? [{ id: 1, name: "ios", color: "#1F8DE0" }] : []), ...(n % 4 === 1 ? [{ id: 2, name: "tech debt", color: null }] : [])],
      owner_ids: n % 2 ? [members[(n + 2) % members.length]!.id] : [],
      requested_by_id: members[n % members.length]!.id,
      created_at: at(n),
      updated_at: at(n, 30),
      started_at: st.type === "started" || st.type === "done" ? at(n, 20) : null,
      completed_at: st.type === "done" ? at(n, 40) : null,
      custom_fields: priorityValue ? [{ field_id: priority.id, value_id: priorityValue.id, value: priorityValue.value }] : [],
      comments,
      files,
      linked_files: linked,
      story_links: [],
      tasks: n % 5 === 1 ? [{ id: n * 10, description: "Write the test", complete: true }, { id: n * 10 + 1, description: "Ship it", complete: false }] : [],
      app_url: `https://app.shortcut.com/acme/story/${id}`,
    });
  }
  // Links as Shortcut shows them: on both stories, the subject's side and the object's.
  let linkId = 40000;
  const link = (subject: ShortcutStory, verb: string, object: ShortcutStory) => {
    const base = { id: linkId++, subject_id: subject.id, object_id: object.id, verb, created_at: subject.created_at };
    subject.story_links!.push({ ...base, type: "subject" });
    object.story_links!.push({ ...base, type: "object" });
  };
  for (let n = 2; n < stories.length; n += 5) link(stories[n]!, "blocks", stories[n - 1]!);
  for (let n = 10; n < stories.length; n += 11) link(stories[n]!, "duplicates", stories[n - 3]!);
  for (let n = 6; n + 1 < stories.length; n += 7) link(stories[n]!, "relates to", stories[n + 1]!);
  if (epicFiles) {
    for (const [e, epic] of epics.entries()) {
      if (e % 2 === 1) continue;
      const plan = fileId++;
      const notes = fileId++;
      epic.description = `${epic.description}\n\n![roadmap-${e}.png](https://media.shortcut.example/api/attachments/files/clubhouse-assets/${plan}/roadmap-${e}.png) and [elsewhere](https://example.com/epic-${e}.png)`;
      epic.files_for_fake = [{ id: plan, size: 2000 }, { id: notes, size: 1500 }];
      const reply = epic.comments?.[0]?.comments?.[0];
      if (reply) reply.text = `${reply.text}: [notes-${e}.pdf](https://media.shortcut.example/api/attachments/files/clubhouse-assets/${notes}/notes-${e}.pdf)`;
    }
  }
  if (elsewhere > 0) {
    // An epic only the other team's stories are in: not the team's, so not imported with it.
    epics.push({ ...epics[0]!, id: 9000 + epics.length, name: "Web's own epic", comments: [], files_for_fake: [] });
    otherTeam.num_stories = elsewhere;
    for (let k = 0; k < elsewhere; k++) {
      const n = count + k + 1;
      const id = 100 + n;
      const epicId = k === elsewhere - 1 ? null : k === elsewhere - 2 ? epics.at(-1)!.id : epics[k % 6]!.id;
      stories.push({ ...stories[k % stories.length]!, id, name: `Web story ${k}`, group_id: otherTeam.id, epic_id: epicId, comments: [{ id: commentId++, author_id: members[k % members.length]!.id, text: `From the web team on sc-${id}`, created_at: at(n, 1), updated_at: at(n, 1), deleted: false, parent_id: null }], files: [], linked_files: [], story_links: [], tasks: [], app_url: `https://app.shortcut.com/acme/story/${id}` });
    }
    const web = stories.filter((s) => s.group_id === otherTeam.id);
    // Both ways across the teams: a web story blocks a team story, and a team story relates to a web one.
    for (const [k, story] of web.entries()) {
      if (k % 2 === 0) link(story, "blocks", stories[k]!);
      else link(stories[k]!, "relates to", story);
    }
  }
  for (let k = 0; k < moreEpics; k++) epics.push({ ...epics[k % 6]!, id: 9100 + k, name: `Planned epic ${k}`, comments: [], files_for_fake: [], archived: k % 5 === 4 });
  // An epic put away (Shortcut's `archived: true`), no story in it: listed by the API, never imported.
  epics.push({ ...epics[0]!, id: ARCHIVED_EPIC, name: "Archived epic", description: "Done with", comments: [], files_for_fake: [], archived: true });
  return { slug: "acme", members, workflow: { id: 500000000, name: "Engineering", states }, priority, team, otherTeam, stories, epics };
}

const slim = (s: ShortcutStory) => {
  const { comments, files, linked_files, tasks, ...rest } = s;
  return { ...rest, entity_type: "story", comment_ids: (comments ?? []).map((c) => c.id), file_ids: (files ?? []).map((f) => f.id), linked_file_ids: (linked_files ?? []).map((f) => f.id), task_ids: (tasks ?? []).map((t) => t.id), num_tasks_completed: (tasks ?? []).filter((t) => t.complete).length };
};

export async function startFakeShortcut({ workspace = generateShortcutWorkspace() }: { workspace?: FakeShortcutWorkspace } = {}): Promise<FakeShortcut> {
  const token = crypto.randomUUID();
  const failing = scriptedFailures((res, reply) => (reply.status === 429 ? json(res, 429, { message: "Rate limit exceeded" }, { "retry-after": String(reply.retryAfterSeconds) }) : json(res, reply.status, { message: "Service Unavailable" })));
  const fake: FakeShortcut = {
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
  const server = http.createServer(async (req, res) => {
    for await (const _ of req);
    const url = new URL(req.url ?? "/", "http://fake");
    const file = /^\/api\/attachments\/files\/clubhouse-assets\/([0-9]+)\/[^/]+$/.exec(url.pathname);
    if (req.method === "GET" && file) {
      fake.fileRequests.push({ path: url.pathname, withToken: req.headers["shortcut-token"] === token });
      if (req.headers["shortcut-token"] !== token) return json(res, 401, { message: "Unauthorized" });
      const bytes = fake.files.get(Number(file[1]));
      if (!bytes) return json(res, 404, { message: "Resource does not exist" });
      res.writeHead(200, { "content-type": "image/png", "content-length": String(bytes.length) });
      return void res.end(bytes);
    }
    if (failing.answer(req, url, res)) return;
    if (req.headers["shortcut-token"] !== token) return json(res, 401, { message: "Unauthorized" });
    const w = fake.workspace;
    const path = url.pathname.replace(/^\/api\/v3/, "");
    if (req.method !== "GET") return json(res, 404, { message: "Resource does not exist" });
    if (path === "/member") return json(res, 200, { id: w.members[0]!.id, name: w.members[0]!.profile.name, mention_name: w.members[0]!.profile.mention_name, workspace2: { url_slug: w.slug, estimate_scale: [0, 1, 2, 3, 5, 8] } });
    if (path === "/members") return json(res, 200, w.members.map((m) => ({ ...m, entity_type: "member", role: "member", created_at: "2024-01-01T00:00:00Z" })));
    if (path === "/workflows") return json(res, 200, [{ ...w.workflow, entity_type: "workflow", states: w.workflow.states.map((s, position) => ({ ...s, position, entity_type: "workflow-state" })) }]);
    if (path === "/custom-fields") return json(res, 200, [{ ...w.priority, field_type: "enum", enabled: true, entity_type: "custom-field" }, { id: "5f000000-cf00-4000-8000-000000000002", name: "Skill Set", field_type: "enum", enabled: true, values: [] }]);
    if (path === "/groups") return json(res, 200, [w.team, w.otherTeam].map((g) => ({ ...g, entity_type: "group" })));
    const groupStories = /^\/groups\/([^/]+)\/stories$/.exec(path);
    if (groupStories) {
      const id = decodeURIComponent(groupStories[1]!);
      if (id !== w.team.id && id !== w.otherTeam.id) return json(res, 404, { message: "Resource does not exist" });
      const limit = Number(url.searchParams.get("limit") ?? 1000);
      const offset = Number(url.searchParams.get("offset") ?? 0);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000 || !Number.isInteger(offset) || offset < 0) return json(res, 400, { message: "Schema mismatch" });
      const all = w.stories.filter((s) => (s.group_id ?? w.team.id) === id);
      return json(res, 200, all.slice(offset, offset + limit).map(slim));
    }
    const story = /^\/stories\/([0-9]+)$/.exec(path);
    if (story) {
      const s = w.stories.find((x) => x.id === Number(story[1]));
      return s ? json(res, 200, { ...s, entity_type: "story" }) : json(res, 404, { message: "Resource does not exist" });
    }
    // An epic as the API shows it: without the fake's files, with its teams and its story count.
    const shown = (e: FakeShortcutWorkspace["epics"][number], slim: boolean) => {
      const { files_for_fake: _files, comments, ...rest } = e;
      const mine = w.stories.filter((st) => st.epic_id === e.id);
      return { ...rest, ...(slim ? {} : { comments }), entity_type: "epic", app_url: `https://app.shortcut.com/${w.slug}/epic/${e.id}`, group_ids: [...new Set(mine.map((st) => st.group_id))], stats: { num_stories_total: mine.length, num_stories_done: mine.filter((st) => st.completed_at).length } };
    };
    if (path === "/epics") return json(res, 200, w.epics.map((e) => shown(e, true)));
    if (path === "/epics/paginated") {
      const page = Number(url.searchParams.get("page") ?? 1);
      const size = Number(url.searchParams.get("page_size") ?? 10);
      if (!Number.isInteger(page) || page < 1 || !Number.isInteger(size) || size < 1 || size > 250) return json(res, 400, { message: "Schema mismatch" });
      const data = w.epics.slice((page - 1) * size, page * size).map((e) => shown(e, true));
      return json(res, 200, { data, next: page * size < w.epics.length ? page + 1 : null, total: w.epics.length });
    }
    const epic = /^\/epics\/([0-9]+)$/.exec(path);
    if (epic) {
      const e = w.epics.find((x) => x.id === Number(epic[1]));
      return e ? json(res, 200, shown(e, false)) : json(res, 404, { message: "Resource does not exist" });
    }
    const epicStories = /^\/epics\/([0-9]+)\/stories$/.exec(path);
    if (epicStories) {
      const e = w.epics.find((x) => x.id === Number(epicStories[1]));
      if (!e) return json(res, 404, { message: "Resource does not exist" });
      const withDescription = url.searchParams.get("includes_description") === "true";
      return json(res, 200, w.stories.filter((st) => st.epic_id === e.id).map((st) => (withDescription ? slim(st) : (({ description: _, ...rest }) => rest)(slim(st)))));
    }
    return json(res, 404, { message: "Resource does not exist" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.url = `${fake.origin}/api/v3`;
  // Uploaded files are served from this server (as Shortcut's media host), so their urls name it.
  const bytesOf = (id: number, size: number) => Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(size - 8, id % 251)]);
  for (const s of workspace.stories) {
    for (const f of s.files ?? []) {
      f.url = f.url.replace("https://media.shortcut.example", fake.origin);
      fake.files.set(f.id, bytesOf(f.id, f.size ?? 100));
    }
  }
  // An epic's uploads are named in its text only.
  const onMedia = (text: string | null | undefined) => text?.split("https://media.shortcut.example").join(fake.origin) ?? null;
  for (const e of workspace.epics) {
    e.description = onMedia(e.description);
    const rewrite = (list: ShortcutThreadedComment[] | undefined) => {
      for (const c of list ?? []) {
        c.text = onMedia(c.text);
        rewrite(c.comments);
      }
    };
    rewrite(e.comments);
    for (const f of e.files_for_fake ?? []) fake.files.set(f.id, bytesOf(f.id, f.size));
  }
  return fake;
}
