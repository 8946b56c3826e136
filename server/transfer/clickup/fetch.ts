import { DomainError } from "../../errors.ts";
import type { ReadNotice } from "../pipeline/stream.ts";
import type { ClickUpApi } from "./client.ts";

/**
 * Reading a ClickUp List, or every List of a Space (folderless ones first, then each Folder's),
 * through API v2: a List's tasks page by page (`/list/{id}/task`, `page` from 0 until
 * `last_page`, subtasks and closed tasks included, descriptions as Markdown), each read whole
 * (`/task/{id}`: its attachments), its comments newest first in pages of 25 (`start`/`start_id`
 * name the oldest seen) and each comment's threaded replies (`/comment/{id}/reply`).
 */
export interface ClickUpUser {
  id: number;
  username: string | null;
  email?: string | null;
  color?: string | null;
  initials?: string;
  profilePicture?: string | null;
}
export interface ClickUpStatus {
  status: string;
  /** open, custom, done, closed */
  type: string;
  color?: string;
  orderindex?: number;
}
export interface ClickUpTag {
  name: string;
  tag_fg?: string;
  tag_bg?: string;
}
export interface ClickUpPriority {
  /** "1" urgent … "4" low */
  id: string;
  priority: string;
  color?: string;
  orderindex?: string;
}
/** `task_id` waits on `depends_on`; `type` 0 is "waiting on", 1 "blocking", as seen from the task carrying it. */
export interface ClickUpDependency {
  task_id: string;
  depends_on: string;
  type: number;
  date_created: string;
  userid?: string;
}
export interface ClickUpLinkedTask {
  task_id: string;
  link_id: string;
  date_created: string;
  userid?: string;
}
export interface ClickUpAttachment {
  id: string;
  date: string | number;
  title: string;
  extension?: string;
  url: string;
  size?: number | null;
  user?: ClickUpUser | null;
}
export interface ClickUpChecklist {
  id: string;
  name: string;
  items: { id: string; name: string; resolved: boolean }[];
}
export interface ClickUpTask {
  id: string;
  custom_id?: string | null;
  name: string;
  text_content?: string | null;
  description?: string | null;
  markdown_description?: string | null;
  status: ClickUpStatus;
  date_created: string;
  date_updated?: string | null;
  date_closed?: string | null;
  date_done?: string | null;
  archived?: boolean;
  creator?: ClickUpUser | null;
  assignees?: ClickUpUser[];
  tags?: ClickUpTag[];
  parent?: string | null;
  priority?: ClickUpPriority | null;
  due_date?: string | null;
  start_date?: string | null;
  points?: number | null;
  checklists?: ClickUpChecklist[];
  dependencies?: ClickUpDependency[];
  linked_tasks?: ClickUpLinkedTask[];
  list?: { id: string; name?: string };
  space?: { id: string };
  url?: string;
  attachments?: ClickUpAttachment[];
}
export interface ClickUpComment {
  id: string;
  comment_text: string;
  user: ClickUpUser | null;
  date: string;
  reply_count?: number | string;
  resolved?: boolean;
}
export interface ClickUpList {
  id: string;
  name: string;
  task_count?: number | null;
  archived?: boolean;
  space?: { id: string; name?: string };
  folder?: { id: string; name?: string; hidden?: boolean };
}
export interface ClickUpSpace {
  id: string;
  name: string;
  archived?: boolean;
}
/** A task with what is read beside it. */
export interface ClickUpTaskRead {
  task: ClickUpTask;
  comments: { comment: ClickUpComment; parentId: string | null }[];
}
/** What an import reads: one List, or a Space's Lists. */
export interface ClickUpTarget {
  kind: "list" | "space";
  id: string;
  name: string;
  lists: ClickUpList[];
  issueCount: number;
}

export const CLICKUP_COMMENTS_PER_PAGE = 25;

/** `list:<id>`, `space:<id>`, a List's or Space's URL (…/v/li/<id>, …/v/s/<id>), or bare digits (a List). */
export function clickupLocation(raw: string): { kind: "list" | "space"; id: string } {
  const v = raw.trim();
  const list = /^list:([0-9A-Za-z_-]+)$/.exec(v) ?? /\/v\/li\/([0-9A-Za-z_-]+)/.exec(v) ?? /^([0-9]+)$/.exec(v);
  if (list) return { kind: "list", id: list[1]! };
  const space = /^space:([0-9A-Za-z_-]+)$/.exec(v) ?? /\/v\/s\/([0-9A-Za-z_-]+)/.exec(v);
  if (space) return { kind: "space", id: space[1]! };
  throw new DomainError("INVALID_INPUT", "name a ClickUp List or Space: its URL, list:<id> or space:<id>", "Copy the List's URL from ClickUp (…/v/li/<id>), or list the Spaces and Lists the token sees.");
}

/** The Lists of a Space the token sees: folderless ones, then each Folder's. */
async function spaceLists(api: ClickUpApi, spaceId: string, notice?: ReadNotice): Promise<ClickUpList[]> {
  const id = encodeURIComponent(spaceId);
  const { lists } = await api.get<{ lists: ClickUpList[] }>(`/space/${id}/list`, { archived: "false" }, notice);
  const { folders } = await api.get<{ folders: { id: string; name: string; lists?: ClickUpList[] }[] }>(`/space/${id}/folder`, { archived: "false" }, notice);
  return [...lists, ...folders.flatMap((f) => f.lists ?? [])].filter((l) => !l.archived);
}

const count = (lists: ClickUpList[]) => lists.reduce((n, l) => n + (l.task_count ?? 0), 0);

export async function fetchClickUpTarget(api: ClickUpApi, where: { kind: "list" | "space"; id: string }): Promise<ClickUpTarget> {
  if (where.kind === "list") {
    const list = await api.get<ClickUpList>(`/list/${encodeURIComponent(where.id)}`);
    return { kind: "list", id: list.id, name: list.name, lists: [list], issueCount: count([list]) };
  }
  const space = await api.get<ClickUpSpace>(`/space/${encodeURIComponent(where.id)}`);
  const lists = await spaceLists(api, space.id);
  return { kind: "space", id: space.id, name: space.name, lists, issueCount: count(lists) };
}

/** Every Space and List of every Workspace the token sees. */
export async function fetchClickUpLocations(api: ClickUpApi) {
  const { teams } = await api.get<{ teams: { id: string; name: string }[] }>("/team");
  const out: { kind: "list" | "space"; id: string; name: string; workspace: string; space: string; issueCount: number }[] = [];
  for (const team of teams) {
    const { spaces } = await api.get<{ spaces: ClickUpSpace[] }>(`/team/${encodeURIComponent(team.id)}/space`, { archived: "false" });
    for (const space of spaces) {
      const lists = await spaceLists(api, space.id);
      out.push({ kind: "space", id: space.id, name: space.name, workspace: team.name, space: space.name, issueCount: count(lists) });
      for (const l of lists) out.push({ kind: "list", id: l.id, name: l.name, workspace: team.name, space: space.name, issueCount: l.task_count ?? 0 });
    }
  }
  return out;
}

async function taskComments(api: ClickUpApi, taskId: string, notice?: ReadNotice): Promise<ClickUpTaskRead["comments"]> {
  const top: ClickUpComment[] = [];
  for (let page: ClickUpComment[] = []; ; ) {
    const last = top.at(-1);
    page = (await api.get<{ comments: ClickUpComment[] }>(`/task/${encodeURIComponent(taskId)}/comment`, last ? { start: last.date, start_id: last.id } : {}, notice)).comments;
    top.push(...page);
    if (page.length < CLICKUP_COMMENTS_PER_PAGE) break;
  }
  const out: ClickUpTaskRead["comments"] = [];
  // Oldest first, each followed by its replies.
  for (const c of top.reverse()) {
    out.push({ comment: c, parentId: null });
    if (Number(c.reply_count ?? 0) === 0) continue;
    const { comments: replies } = await api.get<{ comments: ClickUpComment[] }>(`/comment/${encodeURIComponent(c.id)}/reply`, {}, notice);
    for (const r of [...replies].sort((a, b) => Number(a.date) - Number(b.date))) out.push({ comment: r, parentId: c.id });
  }
  return out;
}

/** One page of the target's tasks (cursor `<list index>:<page>`), each read whole with its comments. */
export async function fetchClickUpPage(api: ClickUpApi, target: ClickUpTarget, cursor: string | null, notice?: ReadNotice): Promise<{ tasks: ClickUpTaskRead[]; next: string | null }> {
  const [at = 0, page = 0] = (cursor ?? "0:0").split(":").map(Number);
  const list = target.lists[at];
  if (!list) return { tasks: [], next: null };
  const query = { page, subtasks: "true", include_closed: "true", include_markdown_description: "true", archived: "false" };
  const got = await api.get<{ tasks: ClickUpTask[]; last_page?: boolean }>(`/list/${encodeURIComponent(list.id)}/task`, query, notice);
  const tasks: ClickUpTaskRead[] = [];
  for (const slim of got.tasks) {
    const task = await api.get<ClickUpTask>(`/task/${encodeURIComponent(slim.id)}`, { include_markdown_description: "true" }, notice);
    tasks.push({ task, comments: await taskComments(api, task.id, notice) });
  }
  const lastPage = got.last_page ?? got.tasks.length === 0;
  const next = !lastPage ? `${at}:${page + 1}` : at + 1 < target.lists.length ? `${at + 1}:0` : null;
  return { tasks, next };
}
