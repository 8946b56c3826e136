import type { IssueStatus } from "../../../db/schema/index.ts";
import type { SourceIssue, SourceMapping, SourceReader, SourceRelationType } from "../pipeline/stream.ts";
import { sameOrigin } from "../pipeline/files.ts";
import { filesNamed, withInlineFiles } from "../pipeline/inline-files.ts";
import type { LinearApi } from "./client.ts";
import { fetchIssuePage, type LinearIssue } from "./fetch.ts";

/** Linear's state types as Retasc statuses. A started issue is `doing` with no lease: available work, as DESIGN has an unheld doing. */
export function statusOf(stateType: string): IssueStatus {
  if (stateType === "started") return "doing";
  if (stateType === "completed") return "done";
  if (stateType === "canceled") return "canceled";
  return "todo";
}

/** Linear's relation types as Retasc's: `similar` (Linear's suggestion) is kept as related. */
export function relationTypeOf(type: string): SourceRelationType {
  return type === "blocks" ? "blocks" : type === "duplicate" ? "duplicate" : "related";
}

const priorityNames = ["none", "urgent", "high", "medium", "low"];

/**
 * A Linear issue in the pipeline's terms; Linear's ids stay bare (links made before the pipeline
 * hold them so). The owner's mapping names workflow states (In Review) and priorities (urgent);
 * an issue it moves to done or canceled ends when Linear ended or last updated it.
 */
export function fromLinear(li: LinearIssue, teamKey: string, uploads: string, mapping: SourceMapping = {}): SourceIssue {
  const byType = statusOf(li.stateType);
  const status = mapping.statuses?.[li.stateName] ?? byType;
  const sourcePriority = priorityNames[li.priority] ?? String(li.priority);
  const ended = li.completedAt ?? li.canceledAt ?? li.updatedAt;
  return {
    id: li.id,
    number: li.number,
    key: `${teamKey}-${li.number}`,
    title: li.title,
    body: li.description,
    status,
    priority: mapping.priorities?.[sourcePriority] ?? li.priority,
    sourceStatus: li.stateName,
    sourcePriority,
    estimate: li.estimate,
    dueDate: li.dueDate,
    createdAt: li.createdAt,
    updatedAt: li.updatedAt,
    startedAt: li.startedAt,
    // Linear's own times while its state type stands; a mapped status takes the issue's end.
    completedAt: status === byType ? li.completedAt : status === "done" ? ended : null,
    canceledAt: status === byType ? li.canceledAt : status === "canceled" ? ended : null,
    parentId: li.parentId,
    creator: li.creator,
    assignee: li.assignee,
    labels: li.labels,
    comments: li.comments.map((c) => ({ id: c.id, body: c.body, createdAt: c.createdAt, retractedAt: c.archivedAt, parentId: c.parentId, author: c.user })),
    // A file uploaded to Linear is served from its uploads host; any other url is a link (a pull request, a design).
    // An image or file pasted into the description or a comment is on that host too, and comes over as a file.
    attachments: withInlineFiles(
      li,
      li.attachments.map((a) => ({ id: a.id, title: a.title, url: a.url, createdAt: a.createdAt, author: a.creator, ...(sameOrigin(a.url, uploads) ? { file: { size: null } } : {}) })),
      filesNamed([li.description, ...li.comments.map((c) => c.body)], (url) => sameOrigin(url, uploads)),
      li.creator,
    ),
    relations: li.relations.map((r) => ({ id: r.id, type: relationTypeOf(r.type), targetId: r.relatedIssueId, createdAt: r.createdAt })),
  };
}

/** A Linear team as the pipeline reads a source: Linear's cursor pages, mapped, and its uploaded files. */
export function linearReader(api: LinearApi, teamId: string, teamKey: string, mapping: SourceMapping = {}): SourceReader {
  return {
    source: "linear",
    async readPage(cursor) {
      const page = await fetchIssuePage(api, teamId, cursor);
      return { issues: page.issues.map((li) => fromLinear(li, teamKey, api.uploads, mapping)), next: page.hasNextPage ? page.endCursor : null };
    },
    fetchFile: api.fetchFile,
  };
}
