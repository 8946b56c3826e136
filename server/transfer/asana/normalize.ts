import type { IssueStatus } from "../../../db/schema/index.ts";
import { BODY_MAX_CHARS } from "../../issues/schemas.ts";
import type { ReadNotice, SourceIssue, SourceMapping, SourcePerson, SourceReader } from "../pipeline/stream.ts";
import type { AsanaApi } from "./client.ts";
import { fetchAsanaPage, type AsanaTaskRead, type AsanaUser } from "./fetch.ts";
import { asanaRichText } from "./rich-text.ts";

/**
 * An Asana task in the pipeline's terms (decision 065). Asana has no status, only `completed`
 * and the section a task sits in: a completed task is done; an open one takes its section's
 * status by the section's words (In Progress, Doing, Review → doing; Done → done; Canceled,
 * Won't do → canceled; any other → todo). Priority is the enum custom field named Priority when
 * the project has one, by its option's name (Urgent/Highest → 1 … Low → 4), else none. The
 * owner's mapping (`statuses` by section name or "Completed", `priorities` by option name)
 * overrides both. Subtasks name their parent (which becomes a container); a task's dependents
 * are the tasks it blocks; comments are the stories of type comment; an attachment Asana stores
 * is a file, one on Dropbox, Drive, Box… a link.
 */
export const COMPLETED = "Completed";
export const NO_SECTION = "No section";

export function sectionStatus(name: string): IssueStatus {
  const n = name.toLowerCase();
  if (/cancel|won'?t|wont|abandon|declin|obsolete|rejected/.test(n)) return "canceled";
  if (/\b(done|complete|completed|finished|shipped|closed|released)\b/.test(n)) return "done";
  if (/progress|doing|started|review|active|working|testing|qa\b/.test(n)) return "doing";
  return "todo";
}

export function asanaStatus(sourceStatus: string, mapping: SourceMapping = {}): IssueStatus {
  return mapping.statuses?.[sourceStatus] ?? (sourceStatus === COMPLETED ? "done" : sectionStatus(sourceStatus));
}

const defaultPriorities: Record<string, number> = { urgent: 1, highest: 1, critical: 1, p0: 1, high: 2, p1: 2, medium: 3, normal: 3, p2: 3, low: 4, lowest: 4, p3: 4, p4: 4 };

export function asanaPriority(name: string | undefined, mapping: SourceMapping = {}): number {
  if (!name) return 0;
  return mapping.priorities?.[name] ?? defaultPriorities[name.toLowerCase()] ?? 0;
}

/** Asana's named tag colours, as the nearest hex; a tag without one gets grey. */
const TAG_COLORS: Record<string, string> = {
  "dark-pink": "#e362e3", "dark-green": "#5a9e3c", "dark-blue": "#4573d2", "dark-red": "#e8384f", "dark-teal": "#4ecbc4", "dark-brown": "#a66c4f",
  "dark-orange": "#fd612c", "dark-purple": "#7a6ff0", "dark-warm-gray": "#8d84ad", "light-pink": "#f9aaef", "light-green": "#b4dc6c", "light-blue": "#9ee7e3",
  "light-red": "#fcbfbf", "light-teal": "#a4e8e1", "light-brown": "#eec300", "light-orange": "#fd9a00", "light-purple": "#d9a9ff", "light-warm-gray": "#c7c4c4",
};
export const ASANA_GREY = "#6b778c";

const person = (u: AsanaUser | null | undefined): SourcePerson | null => (u?.gid ? { id: `asana:user:${u.gid}`, name: u.name || "Asana user", email: u.email || null } : null);
const id = (kind: string, gid: string) => `asana:${kind}:${gid}`;
const plainText = (text: string | null | undefined) => (text ? text.slice(0, BODY_MAX_CHARS) : null);
const calendarDate = (v: string | null | undefined) => (v && /^\d{4}-\d{2}-\d{2}/.test(v) ? v.slice(0, 10) : null);

export function fromAsana(projectGid: string, read: AsanaTaskRead, mapping: SourceMapping = {}): SourceIssue {
  const { task } = read;
  const section = task.memberships?.find((m) => m.project?.gid === projectGid)?.section?.name;
  const sourceStatus = task.completed ? COMPLETED : (section ?? NO_SECTION);
  const status = asanaStatus(sourceStatus, mapping);
  const priorityField = task.custom_fields?.find((f) => f.name.trim().toLowerCase() === "priority");
  const sourcePriority = priorityField?.enum_value?.name ?? priorityField?.display_value ?? undefined;
  const ended = task.completed_at ?? task.modified_at;
  return {
    id: id("task", task.gid),
    number: null,
    key: task.gid,
    title: (task.name?.trim() || "(untitled task)").slice(0, 500),
    // The rich text as Markdown; the plain `notes` only when Asana gave no rich text.
    body: asanaRichText(task.html_notes) ?? plainText(task.notes),
    status,
    priority: asanaPriority(sourcePriority, mapping),
    sourceStatus,
    sourcePriority: sourcePriority ?? "",
    estimate: null,
    dueDate: calendarDate(task.due_on) ?? calendarDate(task.due_at),
    createdAt: task.created_at,
    updatedAt: task.modified_at,
    startedAt: null,
    completedAt: status === "done" ? ended : null,
    canceledAt: status === "canceled" ? ended : null,
    parentId: task.parent?.gid ? id("task", task.parent.gid) : null,
    creator: person(task.created_by),
    assignee: person(task.assignee),
    labels: (task.tags ?? []).map((t) => ({ id: id("tag", t.gid), name: t.name.slice(0, 100), color: (t.color && TAG_COLORS[t.color]) || ASANA_GREY })),
    comments: read.stories
      .filter((s) => s.resource_subtype === "comment_added" || s.type === "comment")
      .map((s) => ({ id: id("story", s.gid), body: asanaRichText(s.html_text) ?? plainText(s.text) ?? "", createdAt: s.created_at, retractedAt: null, parentId: null, author: person(s.created_by) })),
    attachments: read.attachments.map((a) => {
      const stored = (a.host ?? a.resource_subtype) === "asana";
      return {
        id: id("attachment", a.gid),
        title: a.name.slice(0, 500),
        // A stored file's lasting link is Asana's own; a Drive or Dropbox file is where it lives.
        url: (stored ? a.permanent_url || a.view_url : a.view_url || a.permanent_url) || a.download_url || "",
        createdAt: a.created_at,
        author: null,
        ...(stored ? { file: { size: typeof a.size === "number" ? a.size : null } } : {}),
      };
    }),
    // Each task carries the edges to its dependents (the tasks waiting on it), so every dependency comes once.
    relations: (task.dependents ?? []).map((d) => ({ id: id("dependency", `${task.gid}-${d.gid}`), type: "blocks" as const, targetId: id("task", d.gid), createdAt: task.created_at })),
  };
}

/** An Asana project as the pipeline reads a source. */
export function asanaReader(api: AsanaApi, projectGid: string, mapping: SourceMapping = {}): SourceReader {
  return {
    source: "asana",
    async readPage(cursor: string | null, notice?: ReadNotice) {
      const page = await fetchAsanaPage(api, projectGid, cursor, notice);
      return { issues: page.tasks.map((t) => fromAsana(projectGid, t, mapping)), next: page.next };
    },
    fetchFile: api.fetchFile,
  };
}
