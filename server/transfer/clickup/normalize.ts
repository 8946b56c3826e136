import type { IssueStatus } from "../../../db/schema/index.ts";
import { BODY_MAX_CHARS } from "../../issues/schemas.ts";
import type { ReadNotice, SourceIssue, SourceMapping, SourcePerson, SourceReader, SourceRelation } from "../pipeline/stream.ts";
import type { ClickUpApi } from "./client.ts";
import { fetchClickUpPage, type ClickUpTarget, type ClickUpTaskRead, type ClickUpUser } from "./fetch.ts";

/**
 * A ClickUp task in the pipeline's terms (decision 074). Its status is its status's type (open →
 * todo, custom → doing, done and closed → done; a name that reads canceled or won't do →
 * canceled, whatever its type), its priority ClickUp's own 1-4 (urgent, high, normal, low: ours
 * too); both overridable by ClickUp's names. A subtask names its parent (which the linking pass
 * makes a container); a dependency comes once, from the blocker's side (`depends_on` blocks
 * `task_id`); linked tasks are related; comments keep their threaded replies; checklists become a
 * Markdown checklist under the description; uploads on ClickUp's hosts are files, anything else a link.
 */
export function statusTypeStatus(name: string, type: string): IssueStatus {
  if (/cancel|won'?t|wont|abandon|declin|obsolete|rejected/i.test(name)) return "canceled";
  if (type === "done" || type === "closed") return "done";
  if (type === "custom") return "doing";
  return "todo";
}

export function clickupStatus(name: string, type: string, mapping: SourceMapping = {}): IssueStatus {
  return mapping.statuses?.[name] ?? statusTypeStatus(name, type);
}

const defaultPriorities: Record<string, number> = { urgent: 1, high: 2, normal: 3, low: 4 };

export function clickupPriority(name: string | undefined, mapping: SourceMapping = {}): number {
  if (!name) return 0;
  return mapping.priorities?.[name] ?? defaultPriorities[name.toLowerCase()] ?? 0;
}

export const CLICKUP_GREY = "#6b778c";
const id = (kind: string, value: string | number) => `clickup:${kind}:${value}`;
/** ClickUp's times are Unix milliseconds, as strings. */
const iso = (ms: string | number | null | undefined) => (ms !== null && ms !== undefined && Number.isFinite(Number(ms)) && String(ms).trim() !== "" ? new Date(Number(ms)).toISOString() : null);
const person = (u: ClickUpUser | null | undefined): SourcePerson | null => (u && typeof u.id === "number" && u.id > 0 ? { id: id("user", u.id), name: u.username || u.email || "ClickUp user", email: u.email || null } : null);

export function fromClickUp(read: ClickUpTaskRead, onClickUp: (url: string) => boolean, mapping: SourceMapping = {}): SourceIssue {
  const { task } = read;
  const status = clickupStatus(task.status.status, task.status.type, mapping);
  const sourcePriority = task.priority?.priority;
  const created = iso(task.date_created) ?? new Date(0).toISOString();
  const updated = iso(task.date_updated) ?? created;
  const ended = iso(task.date_done) ?? iso(task.date_closed) ?? updated;
  const checklists = (task.checklists ?? []).map((c) => [`**${c.name.replace(/\s+/g, " ").trim()}**`, ...c.items.map((i) => `- [${i.resolved ? "x" : " "}] ${i.name.replace(/\s+/g, " ").trim()}`)].join("\n"));
  const body = [(task.markdown_description ?? task.text_content ?? "").trim(), ...checklists].filter(Boolean).join("\n\n");
  const due = iso(task.due_date);
  const relations: SourceRelation[] = [
    // Every dependency is on both its tasks: taken from the blocker's side, so it comes once.
    ...(task.dependencies ?? []).filter((d) => d.depends_on === task.id).map((d) => ({ id: id("dependency", `${d.depends_on}-${d.task_id}`), type: "blocks" as const, targetId: id("task", d.task_id), createdAt: iso(d.date_created) ?? created })),
    ...(task.linked_tasks ?? [])
      .map((l) => [l.task_id, l.link_id, l.date_created] as const)
      .map(([a, b, at]) => (a === task.id ? [a, b, at] : [b, a, at]) as [string, string, string])
      .filter(([self, other]) => self < other)
      .map(([self, other, at]) => ({ id: id("link", `${self}-${other}`), type: "related" as const, targetId: id("task", other), createdAt: iso(at) ?? created })),
  ];
  return {
    id: id("task", task.id),
    number: null,
    key: task.custom_id || task.id,
    title: (task.name?.trim() || `Task ${task.id}`).slice(0, 500),
    body: body ? body.slice(0, BODY_MAX_CHARS) : null,
    status,
    priority: clickupPriority(sourcePriority, mapping),
    sourceStatus: task.status.status,
    sourcePriority: sourcePriority ?? "",
    estimate: typeof task.points === "number" ? task.points : null,
    // ClickUp keeps a due date as an instant; its calendar day in UTC is the date.
    dueDate: due ? due.slice(0, 10) : null,
    createdAt: created,
    updatedAt: updated,
    startedAt: status === "doing" ? iso(task.start_date) : null,
    completedAt: status === "done" ? ended : null,
    canceledAt: status === "canceled" ? ended : null,
    parentId: task.parent ? id("task", task.parent) : null,
    creator: person(task.creator),
    assignee: person(task.assignees?.[0]),
    labels: (task.tags ?? []).map((t) => ({ id: id("tag", t.name.toLowerCase()), name: t.name.slice(0, 100), color: t.tag_bg && /^#[0-9a-f]{6}$/i.test(t.tag_bg) ? t.tag_bg.toLowerCase() : CLICKUP_GREY })),
    comments: read.comments.map(({ comment: c, parentId }) => ({
      id: id("comment", c.id),
      body: (c.comment_text ?? "").slice(0, BODY_MAX_CHARS),
      createdAt: iso(c.date) ?? created,
      retractedAt: null,
      parentId: parentId ? id("comment", parentId) : null,
      author: person(c.user),
    })),
    attachments: (task.attachments ?? []).map((a) => ({
      id: id("attachment", a.id),
      title: (a.title || "file").slice(0, 500),
      url: a.url,
      createdAt: iso(a.date) ?? created,
      author: person(a.user),
      ...(onClickUp(a.url) ? { file: { size: typeof a.size === "number" ? a.size : null } } : {}),
    })),
    relations,
  };
}

/** A ClickUp List or Space as the pipeline reads a source; a task in two of the Space's Lists comes once. */
export function clickupReader(api: ClickUpApi, target: ClickUpTarget, mapping: SourceMapping = {}): SourceReader {
  const seen = new Set<string>();
  return {
    source: "clickup",
    async readPage(cursor: string | null, notice?: ReadNotice) {
      const page = await fetchClickUpPage(api, target, cursor, notice);
      const fresh = page.tasks.filter((t) => !seen.has(t.task.id) && seen.add(t.task.id));
      return { issues: fresh.map((t) => fromClickUp(t, api.onClickUp, mapping)), next: page.next };
    },
    fetchFile: api.fetchFile,
  };
}
