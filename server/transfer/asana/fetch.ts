import { invalidInput } from "../../errors.ts";
import type { ReadNotice } from "../pipeline/stream.ts";
import type { AsanaApi } from "./client.ts";

/**
 * Reading an Asana project: its tasks page by page (`/projects/{gid}/tasks`, paged by offset),
 * each with its subtasks to any depth (`/tasks/{gid}/subtasks`), its stories (`/tasks/{gid}/stories`,
 * of which the comments are kept) and its attachments (`/attachments?parent=`), every list read
 * to its end. Fields are asked for by `opt_fields`, as Asana returns only a compact record otherwise.
 */
export interface AsanaUser {
  gid: string;
  name?: string;
  /** Absent when the workspace hides it. */
  email?: string | null;
}
export interface AsanaCustomField {
  gid: string;
  name: string;
  resource_subtype?: string;
  enum_value?: { gid: string; name: string } | null;
  display_value?: string | null;
}
export interface AsanaTask {
  gid: string;
  name: string;
  resource_subtype?: string;
  /** The plain text of the description; `html_notes` is the same as rich text (./rich-text.ts). */
  notes?: string;
  html_notes?: string;
  completed: boolean;
  completed_at?: string | null;
  created_at: string;
  modified_at: string;
  due_on?: string | null;
  due_at?: string | null;
  assignee?: AsanaUser | null;
  created_by?: AsanaUser | null;
  tags?: { gid: string; name: string; color?: string | null }[];
  memberships?: { project?: { gid: string }; section?: { gid: string; name: string } | null }[];
  parent?: { gid: string } | null;
  custom_fields?: AsanaCustomField[];
  dependencies?: { gid: string }[];
  dependents?: { gid: string }[];
  num_subtasks?: number;
  permalink_url?: string;
}
export interface AsanaStory {
  gid: string;
  type?: string;
  resource_subtype: string;
  text?: string;
  /** A comment's rich text. */
  html_text?: string;
  created_at: string;
  created_by?: AsanaUser | null;
}
export interface AsanaAttachment {
  gid: string;
  name: string;
  /** `asana` for a file Asana stores; dropbox, gdrive, box, onedrive, vimeo, external otherwise. */
  host?: string;
  resource_subtype?: string;
  size?: number | null;
  created_at: string;
  permanent_url?: string | null;
  view_url?: string | null;
  download_url?: string | null;
}
/** A task as read: with its comments and attachments beside it. */
export interface AsanaTaskRead {
  task: AsanaTask;
  stories: AsanaStory[];
  attachments: AsanaAttachment[];
}

export const ASANA_TASKS_PER_PAGE = 50;
const USER = ["name", "email"];
const TASK_FIELDS = [
  "name", "resource_subtype", "notes", "html_notes", "completed", "completed_at", "created_at", "modified_at", "due_on", "due_at",
  ...USER.map((f) => `assignee.${f}`), ...USER.map((f) => `created_by.${f}`), "tags.name", "tags.color",
  "memberships.project", "memberships.section.name", "parent", "custom_fields.name", "custom_fields.resource_subtype",
  "custom_fields.enum_value.name", "custom_fields.display_value", "dependencies", "dependents", "num_subtasks", "permalink_url",
].join(",");
const STORY_FIELDS = ["type", "resource_subtype", "text", "html_text", "created_at", ...USER.map((f) => `created_by.${f}`)].join(",");
const ATTACHMENT_FIELDS = "name,host,resource_subtype,size,created_at,permanent_url,view_url";

/** A project's gid, also taken from its URL (…/project/<gid>/… or /0/<gid>/…), so a pasted link works. */
export function asanaProjectGid(raw: string): string {
  const value = raw.trim();
  if (/^\d{1,30}$/.test(value)) return value;
  const inUrl = /\/project\/(\d{1,30})(?:\/|$)/.exec(value) ?? /\/0\/(\d{1,30})(?:\/|$)/.exec(value);
  if (inUrl) return inUrl[1]!;
  throw invalidInput(`projectGid: ${value.slice(0, 60)} is not an Asana project`, "Give the project's gid (the digits after /project/ in its URL) or paste its URL.");
}

/** One page of the project's top-level tasks, each with its subtasks (to any depth), comments and attachments. */
export async function fetchAsanaPage(api: AsanaApi, projectGid: string, cursor: string | null, notice?: ReadNotice): Promise<{ tasks: AsanaTaskRead[]; next: string | null }> {
  const page = await api.page<AsanaTask>(`/projects/${projectGid}/tasks`, { opt_fields: TASK_FIELDS, limit: ASANA_TASKS_PER_PAGE }, cursor, notice);
  const out: AsanaTaskRead[] = [];
  const seen = new Set<string>();
  const visit = async (task: AsanaTask, depth: number) => {
    if (seen.has(task.gid)) return;
    seen.add(task.gid);
    const [stories, attachments] = [
      await api.all<AsanaStory>(`/tasks/${task.gid}/stories`, { opt_fields: STORY_FIELDS }, notice),
      await api.all<AsanaAttachment>("/attachments", { parent: task.gid, opt_fields: ATTACHMENT_FIELDS }, notice),
    ];
    out.push({ task, stories, attachments });
    // Asana nests subtasks without a limit; 20 levels is far past any real project's.
    if ((task.num_subtasks ?? 0) > 0 && depth < 20) {
      for (const sub of await api.all<AsanaTask>(`/tasks/${task.gid}/subtasks`, { opt_fields: TASK_FIELDS }, notice)) await visit({ ...sub, parent: sub.parent ?? { gid: task.gid } }, depth + 1);
    }
  };
  for (const task of page.items) await visit(task, 0);
  return { tasks: out, next: page.items.length > 0 ? page.next : null };
}

export interface AsanaProject {
  id: string;
  name: string;
  workspace: string;
  issueCount: number;
}

/** One project by gid, with its task count. */
export async function fetchAsanaProject(api: AsanaApi, gid: string): Promise<AsanaProject> {
  const { data } = await api.get<{ data: { gid: string; name: string; workspace?: { gid: string; name?: string } } }>(`/projects/${gid}`, { opt_fields: "name,workspace.name" });
  return { id: data.gid, name: data.name, workspace: data.workspace?.name ?? "", issueCount: await countAsanaTasks(api, data.gid) };
}

/** The projects of every workspace the token sees, each with its task count (top-level tasks, as Asana counts them). */
export async function fetchAsanaProjects(api: AsanaApi): Promise<AsanaProject[]> {
  const workspaces = await api.all<{ gid: string; name: string }>("/workspaces", { opt_fields: "name" });
  const out: AsanaProject[] = [];
  for (const w of workspaces) {
    for (const p of await api.all<{ gid: string; name: string }>("/projects", { workspace: w.gid, archived: "false", opt_fields: "name" })) {
      out.push({ id: p.gid, name: p.name, workspace: w.name, issueCount: await countAsanaTasks(api, p.gid) });
    }
  }
  return out;
}

async function countAsanaTasks(api: AsanaApi, gid: string): Promise<number> {
  const { data } = await api.get<{ data: { num_tasks?: number } }>(`/projects/${gid}/task_counts`, { opt_fields: "num_tasks" });
  return data.num_tasks ?? 0;
}
