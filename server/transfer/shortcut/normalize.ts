import type { IssueStatus } from "../../../db/schema/index.ts";
import { BODY_MAX_CHARS } from "../../issues/schemas.ts";
import type { ReadNotice, SourceComment, SourceIssue, SourceLabel, SourceMapping, SourcePerson, SourceReader, SourceRelation } from "../pipeline/stream.ts";
import { filesNamed, withInlineFiles } from "../pipeline/inline-files.ts";
import type { ShortcutApi } from "./client.ts";
import { fetchShortcutPage, fetchShortcutWorkspace, type ShortcutEpic, type ShortcutLabel, type ShortcutStory, type ShortcutThreadedComment, type ShortcutWorkspace } from "./fetch.ts";

/**
 * Shortcut's stories and epics in the pipeline's terms (decision 065). A story's status is its
 * workflow state's type (backlog, unstarted → todo; started → doing; done → done), its priority
 * the workspace's Priority field (Highest/Urgent → 1 … Low → 4), both overridable by the state's
 * or the value's name. An epic becomes an issue of its own, the parent of its stories, so the
 * linking pass makes it a container (`work: false`); its state (to do, in progress, done) maps
 * likewise, named `Epic: <state>` in the mapping. Story links come from their subject's side
 * (blocks → blocks, duplicates → duplicate, relates to → related); comments keep their threads;
 * a story's tasks are a checklist under its description; uploaded files on Shortcut's hosts are
 * files, linked files (Drive, Dropbox…) links.
 */
export function stateTypeStatus(type: string): IssueStatus {
  if (type === "started") return "doing";
  if (type === "done") return "done";
  return "todo";
}

const epicStates: Record<string, IssueStatus> = { "to do": "todo", "in progress": "doing", done: "done" };
export const epicSourceStatus = (state: string) => `Epic: ${state}`;

export function shortcutStatus(name: string, type: string, mapping: SourceMapping = {}): IssueStatus {
  return mapping.statuses?.[name] ?? stateTypeStatus(type);
}

const defaultPriorities: Record<string, number> = { urgent: 1, highest: 1, critical: 1, high: 2, medium: 3, normal: 3, low: 4, lowest: 4 };

export function shortcutPriority(name: string | undefined, mapping: SourceMapping = {}): number {
  if (!name) return 0;
  return mapping.priorities?.[name] ?? defaultPriorities[name.toLowerCase()] ?? 0;
}

export const SHORTCUT_GREY = "#6b778c";
const calendarDate = (v: string | null | undefined) => (v && /^\d{4}-\d{2}-\d{2}/.test(v) ? v.slice(0, 10) : null);

/** Ids namespaced by the workspace: Shortcut's numbers are per workspace. */
function idsOf(ws: ShortcutWorkspace) {
  const id = (kind: string, value: string | number) => `shortcut:${ws.slug}:${kind}:${value}`;
  const person = (memberId: string | null | undefined): SourcePerson | null => {
    if (!memberId) return null;
    const m = ws.members.get(memberId);
    return { id: id("member", memberId), name: m?.profile.name || m?.profile.mention_name || "Shortcut member", email: m?.profile.email_address || null };
  };
  const labels = (list: ShortcutLabel[] | undefined): SourceLabel[] => (list ?? []).map((l) => ({ id: id("label", l.id), name: l.name.slice(0, 100), color: l.color && /^#[0-9a-f]{6}$/i.test(l.color) ? l.color.toLowerCase() : SHORTCUT_GREY }));
  return { id, person, labels };
}

export function fromShortcutStory(ws: ShortcutWorkspace, story: ShortcutStory, fileOrigins: string[], mapping: SourceMapping = {}): SourceIssue {
  const { id, person, labels } = idsOf(ws);
  const state = ws.states.get(story.workflow_state_id) ?? { id: story.workflow_state_id, name: `State ${story.workflow_state_id}`, type: "unstarted" };
  const status = shortcutStatus(state.name, state.type, mapping);
  const priorityValue = ws.priority ? story.custom_fields?.find((f) => f.field_id === ws.priority!.fieldId) : undefined;
  const sourcePriority = priorityValue ? (ws.priority!.values.get(priorityValue.value_id) ?? priorityValue.value) : undefined;
  const checklist = (story.tasks ?? []).map((t) => `- [${t.complete ? "x" : " "}] ${t.description.replace(/\s+/g, " ").trim()}`).join("\n");
  const body = [story.description?.trim() ?? "", checklist].filter(Boolean).join("\n\n");
  const updated = story.updated_at ?? story.created_at;
  const comments: SourceComment[] = (story.comments ?? []).map((c) => ({
    id: id("comment", c.id),
    body: (c.text ?? "").slice(0, BODY_MAX_CHARS),
    createdAt: c.created_at,
    retractedAt: c.deleted ? (c.updated_at ?? c.created_at) : null,
    parentId: c.parent_id ? id("comment", c.parent_id) : null,
    author: person(c.author_id),
  }));
  const onShortcut = (url: string) => URL.canParse(url) && fileOrigins.includes(new URL(url).origin);
  return {
    id: id("story", story.id),
    number: null,
    key: `sc-${story.id}`,
    title: (story.name?.trim() || `Story ${story.id}`).slice(0, 500),
    body: body ? body.slice(0, BODY_MAX_CHARS) : null,
    status,
    priority: shortcutPriority(sourcePriority, mapping),
    sourceStatus: state.name,
    sourcePriority: sourcePriority ?? "",
    estimate: typeof story.estimate === "number" ? story.estimate : null,
    dueDate: calendarDate(story.deadline),
    createdAt: story.created_at,
    updatedAt: updated,
    startedAt: status === "doing" ? (story.started_at ?? null) : null,
    completedAt: status === "done" ? (story.completed_at ?? updated) : null,
    canceledAt: status === "canceled" ? (story.completed_at ?? updated) : null,
    parentId: typeof story.epic_id === "number" ? id("epic", story.epic_id) : null,
    creator: person(story.requested_by_id),
    assignee: person(story.owner_ids?.[0]),
    labels: labels(story.labels),
    comments,
    attachments: [
      ...(story.files ?? []).map((f) => ({ id: id("file", f.id), title: (f.name || f.filename || "file").slice(0, 500), url: f.url, createdAt: f.created_at, author: person(f.uploader_id), ...(onShortcut(f.url) ? { file: { size: typeof f.size === "number" ? f.size : null } } : {}) })),
      ...(story.linked_files ?? []).map((f) => ({ id: id("linked-file", f.id), title: f.name.slice(0, 500), url: f.url, createdAt: f.created_at, author: person(f.uploader_id) })),
    ],
    relations: (story.story_links ?? [])
      .filter((l) => l.type === "subject" && l.subject_id === story.id)
      .map((l): SourceRelation => ({ id: id("story-link", l.id), type: l.verb === "blocks" ? "blocks" : l.verb === "duplicates" ? "duplicate" : "related", targetId: id("story", l.object_id), createdAt: l.created_at })),
  };
}

/**
 * An epic as an issue of its own. Shortcut's API lists no files on an epic (an uploaded file
 * names only stories): a file put on an epic is an upload its description or a comment links to
 * on Shortcut's hosts, so those come over as the epic's attachments, files like a story's
 * (../pipeline/inline-files.ts, the text then naming them here).
 */
export function fromShortcutEpic(ws: ShortcutWorkspace, epic: ShortcutEpic, fileOrigins: string[], mapping: SourceMapping = {}): SourceIssue {
  const { id, person, labels } = idsOf(ws);
  const sourceStatus = epicSourceStatus(epic.state);
  const status = mapping.statuses?.[sourceStatus] ?? epicStates[epic.state] ?? "todo";
  const updated = epic.updated_at ?? epic.created_at;
  const comments: SourceComment[] = [];
  const thread = (list: ShortcutThreadedComment[] | undefined, parent: number | null, depth: number) => {
    for (const c of list ?? []) {
      comments.push({ id: id("comment", c.id), body: (c.text ?? "").slice(0, BODY_MAX_CHARS), createdAt: c.created_at, retractedAt: c.deleted ? (c.updated_at ?? c.created_at) : null, parentId: parent === null ? null : id("comment", parent), author: person(c.author_id) });
      if (depth < 40) thread(c.comments, c.id, depth + 1);
    }
  };
  thread(epic.comments, null, 0);
  const createdAt = epic.created_at;
  const body = epic.description?.trim() ? epic.description.slice(0, BODY_MAX_CHARS) : null;
  const onShortcut = (url: string) => URL.canParse(url) && fileOrigins.includes(new URL(url).origin);
  const files = filesNamed([body, ...comments.map((c) => c.body)], onShortcut);
  return {
    id: id("epic", epic.id),
    number: null,
    key: `epic-${epic.id}`,
    title: (epic.name?.trim() || `Epic ${epic.id}`).slice(0, 500),
    body,
    status,
    priority: 0,
    sourceStatus,
    sourcePriority: "",
    estimate: null,
    dueDate: calendarDate(epic.deadline),
    createdAt: epic.created_at,
    updatedAt: updated,
    startedAt: status === "doing" ? (epic.started_at ?? null) : null,
    completedAt: status === "done" ? (epic.completed_at ?? updated) : null,
    canceledAt: status === "canceled" ? (epic.completed_at ?? updated) : null,
    parentId: null,
    creator: person(epic.requested_by_id),
    assignee: person(epic.owner_ids?.[0]),
    labels: labels(epic.labels),
    comments,
    attachments: withInlineFiles({ id: id("epic", epic.id), createdAt }, [], files, person(epic.requested_by_id)),
    relations: [],
  };
}

/** A Shortcut team as the pipeline reads a source: its stories, and their epics as they are first named. */
export function shortcutReader(api: ShortcutApi, groupId: string, mapping: SourceMapping = {}): SourceReader {
  let workspace: ShortcutWorkspace | null = null;
  const epicsSeen = new Set<number>();
  return {
    source: "shortcut",
    async readPage(cursor: string | null, notice?: ReadNotice) {
      workspace ??= await fetchShortcutWorkspace(api, notice);
      const page = await fetchShortcutPage(api, groupId, cursor, epicsSeen, notice);
      const ws = workspace;
      return { issues: [...page.epics.map((e) => fromShortcutEpic(ws, e, api.fileOrigins, mapping)), ...page.stories.map((s) => fromShortcutStory(ws, s, api.fileOrigins, mapping))], next: page.next };
    },
    fetchFile: api.fetchFile,
  };
}
