import type { ReadNotice } from "../pipeline/stream.ts";
import type { ShortcutApi } from "./client.ts";

/**
 * Reading a Shortcut team: its stories page by page (`/groups/{id}/stories`, `limit`/`offset`,
 * slim records), each read whole (`/stories/{id}`: comments, files, linked files, story links,
 * tasks), and the epics they belong to (`/epics/{id}`, with their threaded comments), each once
 * a run, with the epic's stories in other teams (`/epics/{id}/stories`). The workspace's workflows, members and custom fields are read once, before the first page.
 */
export interface ShortcutMember {
  id: string;
  disabled?: boolean;
  profile: { name?: string; mention_name?: string; email_address?: string | null; deactivated?: boolean };
}
export interface ShortcutState {
  id: number;
  name: string;
  /** backlog, unstarted, started, done */
  type: string;
}
export interface ShortcutComment {
  id: number;
  author_id: string | null;
  text: string | null;
  created_at: string;
  updated_at?: string;
  deleted?: boolean;
  parent_id?: number | null;
}
/** An epic's comments: threaded, each with its replies inside. */
export interface ShortcutThreadedComment extends Omit<ShortcutComment, "parent_id"> {
  comments?: ShortcutThreadedComment[];
}
export interface ShortcutLabel {
  id: number;
  name: string;
  color?: string | null;
}
export interface ShortcutFile {
  id: number;
  name: string;
  filename?: string;
  size?: number | null;
  url: string;
  uploader_id?: string | null;
  created_at: string;
}
export interface ShortcutLinkedFile {
  id: number;
  name: string;
  url: string;
  type?: string;
  uploader_id?: string | null;
  created_at: string;
}
export interface ShortcutStoryLink {
  id: number;
  subject_id: number;
  object_id: number;
  /** blocks, duplicates, relates to */
  verb: string;
  /** This story's side of the link. */
  type: "subject" | "object";
  created_at: string;
}
export interface ShortcutStory {
  id: number;
  name: string;
  description?: string | null;
  story_type?: string;
  workflow_state_id: number;
  epic_id?: number | null;
  group_id?: string | null;
  deadline?: string | null;
  estimate?: number | null;
  archived?: boolean;
  labels?: ShortcutLabel[];
  owner_ids?: string[];
  requested_by_id?: string | null;
  created_at: string;
  updated_at?: string | null;
  started_at?: string | null;
  completed_at?: string | null;
  custom_fields?: { field_id: string; value_id: string; value: string }[];
  comments?: ShortcutComment[];
  files?: ShortcutFile[];
  linked_files?: ShortcutLinkedFile[];
  story_links?: ShortcutStoryLink[];
  tasks?: { id: number; description: string; complete: boolean }[];
  app_url?: string;
}
export interface ShortcutEpic {
  id: number;
  name: string;
  description?: string | null;
  /** to do, in progress, done */
  state: string;
  deadline?: string | null;
  labels?: ShortcutLabel[];
  owner_ids?: string[];
  requested_by_id?: string | null;
  created_at: string;
  updated_at?: string | null;
  started_at?: string | null;
  completed_at?: string | null;
  archived?: boolean;
  comments?: ShortcutThreadedComment[];
  /** Counted by Shortcut: the epic's stories, whatever their team. */
  stats?: { num_stories_total?: number };
}
export interface ShortcutGroup {
  id: string;
  name: string;
  mention_name: string;
  archived?: boolean;
  num_stories?: number;
}
/** What every page is read against. */
export interface ShortcutWorkspace {
  slug: string;
  states: Map<number, ShortcutState>;
  members: Map<string, ShortcutMember>;
  /** The Priority field's id and its values' names by value id, when the workspace has it. */
  priority: { fieldId: string; values: Map<string, string> } | null;
}

export const SHORTCUT_STORIES_PER_PAGE = 25;

export async function fetchShortcutWorkspace(api: ShortcutApi, notice?: ReadNotice): Promise<ShortcutWorkspace> {
  const me = await api.get<{ workspace2?: { url_slug?: string } }>("/member", {}, notice);
  const workflows = await api.get<{ states: ShortcutState[] }[]>("/workflows", {}, notice);
  const members = await api.get<ShortcutMember[]>("/members", {}, notice);
  const fields = await api.get<{ id: string; name: string; canonical_name?: string; values?: { id: string; value: string }[] }[]>("/custom-fields", {}, notice);
  const field = fields.find((f) => f.canonical_name === "priority") ?? fields.find((f) => f.name.trim().toLowerCase() === "priority");
  return {
    slug: me.workspace2?.url_slug ?? "workspace",
    states: new Map(workflows.flatMap((w) => w.states).map((s) => [s.id, s])),
    members: new Map(members.map((m) => [m.id, m])),
    priority: field ? { fieldId: field.id, values: new Map((field.values ?? []).map((v) => [v.id, v.value])) } : null,
  };
}

/**
 * One page of the team's stories, each read whole, and the epics first named on this page, each
 * with its stories that live in other teams (`/epics/{id}/stories` lists an epic's stories
 * whatever their team): they come over on the epic's page, read whole as the team's are, so the
 * epic's container holds all of its stories and their links to the team's stories resolve.
 */
export async function fetchShortcutPage(api: ShortcutApi, groupId: string, cursor: string | null, epicsSeen: Set<number>, notice?: ReadNotice): Promise<{ stories: ShortcutStory[]; epics: ShortcutEpic[]; next: string | null }> {
  const offset = Number(cursor ?? 0);
  const slim = await api.get<{ id: number; epic_id?: number | null }[]>(`/groups/${encodeURIComponent(groupId)}/stories`, { limit: SHORTCUT_STORIES_PER_PAGE, offset }, notice);
  const stories: ShortcutStory[] = [];
  for (const s of slim) stories.push(await api.get<ShortcutStory>(`/stories/${Number(s.id)}`, {}, notice));
  const epics: ShortcutEpic[] = [];
  const elsewhere: ShortcutStory[] = [];
  for (const id of new Set(stories.map((s) => s.epic_id).filter((e): e is number => typeof e === "number"))) {
    if (epicsSeen.has(id)) continue;
    epicsSeen.add(id);
    epics.push(await api.get<ShortcutEpic>(`/epics/${id}`, {}, notice));
    // A story has one epic, so one seen here is read on no other page; the team's own come by its pages.
    const inEpic = await api.get<{ id: number; group_id?: string | null }[]>(`/epics/${id}/stories`, {}, notice);
    for (const s of inEpic) if (s.group_id !== groupId) elsewhere.push(await api.get<ShortcutStory>(`/stories/${Number(s.id)}`, {}, notice));
  }
  return { stories: [...stories, ...elsewhere], epics, next: slim.length === SHORTCUT_STORIES_PER_PAGE ? String(offset + slim.length) : null };
}

export async function fetchShortcutGroups(api: ShortcutApi): Promise<ShortcutGroup[]> {
  return (await api.get<ShortcutGroup[]>("/groups")).filter((g) => !g.archived);
}
