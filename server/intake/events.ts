import { z } from "zod";
import type { ConnectorProvider } from "../../db/schema/index.ts";

/**
 * Provider payloads read into one shape. Only the fields intake uses are read; a payload that
 * lacks them is ignored (the delivery is still acknowledged: the provider would only resend it).
 */
export interface SourceIssue {
  /** The provider's issue id: stable across renames and transfers. */
  id: string;
  /** GitHub's number, GitLab's iid: what the write-back addresses. */
  number: number;
  title: string;
  body: string;
  url: string;
  author: string;
  /** The author lacks write access (GitHub: not OWNER, MEMBER or COLLABORATOR); null: ask the provider (GitLab). */
  outsider: boolean | null;
  /** GitLab's author id, for the access-level check. */
  authorId: number | null;
  labels: string[];
  /** GitHub: the milestone's due date; GitLab: the issue's due_date (YYYY-MM-DD). */
  dueAt: string | null;
  open: boolean;
  /** The provider's updated_at, as an ISO instant; null when the payload lacks it. */
  updatedAt: string | null;
}

export type IntakeEvent =
  | { kind: "issue"; action: "opened" | "changed" | "closed" | "reopened" | "deleted"; issue: SourceIssue }
  /** A pull (GitHub) or merge (GitLab) request; `issue.id` is prefixed `pr:` so it never meets an issue's id. */
  | { kind: "pull_request"; action: "opened" | "changed" | "closed" | "reopened"; merged: boolean; issue: SourceIssue }
  | { kind: "comment"; action: "created" | "deleted"; issue: SourceIssue; comment: SourceComment }
  /**
   * A comment on a pull/merge request. `id` is the request's source id (`pr:<id>`); GitHub's
   * issue_comment on a pull request names only its number (its issue id is not the request's).
   */
  | { kind: "request_comment"; action: "created" | "deleted"; request: { id: string | null; number: number }; comment: SourceComment };

export interface SourceComment {
  id: string;
  body: string;
  author: string;
  /** The commenter lacks write access (GitHub's author_association); null: ask the provider (GitLab). */
  outsider: boolean | null;
  /** GitLab's author id of the note, for the access-level check. */
  authorId: number | null;
  updatedAt: string | null;
}

/** The events each provider's webhook uses; anything else is acknowledged with 202 and not stored. */
export const usedEvents: Record<ConnectorProvider, ReadonlySet<string>> = {
  github: new Set(["issues", "issue_comment"]),
  gitlab: new Set(["Issue Hook", "Note Hook"]),
};

/** The pull/merge request stream's events, used only by a connector that turned the stream on. */
export const pullRequestEvents: Record<ConnectorProvider, ReadonlySet<string>> = {
  github: new Set(["pull_request", "pull_request_review_comment"]),
  gitlab: new Set(["Merge Request Hook"]),
};

/** Marks the comments the write-back posts, so their own webhook comes back as nothing. */
export const WRITE_BACK_MARKER = "<!-- retasc:write-back";

const text = z.string().nullish().transform((v) => v ?? "");
/** GitHub's ISO instants and GitLab's "2015-05-17 17:06:40 UTC" as ISO instants; anything else is null. */
const instant = z
  .string()
  .nullish()
  .transform((v) => {
    if (!v) return null;
    const t = Date.parse(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/.test(v) ? `${v.slice(0, 10)}T${v.slice(11, 19)}Z` : v);
    return Number.isFinite(t) ? new Date(t).toISOString() : null;
  });
const login = z.object({ login: z.string().min(1) });
const githubIssue = z.object({
  id: z.number().int(),
  number: z.number().int().positive(),
  title: z.string(),
  body: text,
  html_url: z.string(),
  state: z.string(),
  user: login,
  author_association: z.string().nullish(),
  labels: z.array(z.object({ name: z.string() })).nullish(),
  milestone: z.object({ due_on: z.string().nullish() }).nullish(),
  pull_request: z.unknown().optional(),
  updated_at: instant,
});
const githubComment = z.object({ id: z.number().int(), body: text, user: login, author_association: z.string().nullish(), updated_at: instant });
const githubPayload = z.object({
  action: z.string(),
  issue: githubIssue,
  comment: githubComment.optional(),
});
const githubReviewCommentPayload = z.object({
  action: z.string(),
  pull_request: z.object({ id: z.number().int(), number: z.number().int().positive() }),
  comment: githubComment,
});
const team = new Set(["OWNER", "MEMBER", "COLLABORATOR"]);
/** Outside the team: anything but OWNER, MEMBER or COLLABORATOR (NONE, FIRST_TIMER, CONTRIBUTOR, …), or no association said. */
const outsiderOf = (association: string | null | undefined) => !team.has(association ?? "");

const commentOf = (c: z.output<typeof githubComment>): SourceComment => ({
  id: String(c.id),
  body: c.body,
  author: c.user.login,
  outsider: outsiderOf(c.author_association),
  authorId: null,
  updatedAt: c.updated_at,
});
const commentActions = new Set(["created", "deleted"]);

function fromGithubIssue(i: z.output<typeof githubIssue>): SourceIssue {
  return {
    id: String(i.id),
    number: i.number,
    title: i.title,
    body: i.body,
    url: i.html_url,
    author: i.user.login,
    outsider: outsiderOf(i.author_association),
    authorId: null,
    labels: (i.labels ?? []).map((l) => l.name),
    dueAt: i.milestone?.due_on ?? null,
    open: i.state === "open",
    updatedAt: i.updated_at,
  };
}

const githubIssueActions: Record<string, Extract<IntakeEvent, { kind: "issue" }>["action"]> = {
  opened: "opened",
  edited: "changed",
  labeled: "changed",
  unlabeled: "changed",
  milestoned: "changed",
  demilestoned: "changed",
  closed: "closed",
  reopened: "reopened",
  deleted: "deleted",
};

const githubPullPayload = z.object({
  action: z.string(),
  pull_request: githubIssue.omit({ pull_request: true }).extend({ merged: z.boolean().nullish() }),
});

/** Edits that change what the review item shows; opened, closed and reopened move it. */
const githubPullActions: Record<string, Extract<IntakeEvent, { kind: "pull_request" }>["action"]> = {
  opened: "opened",
  edited: "changed",
  labeled: "changed",
  unlabeled: "changed",
  closed: "closed",
  reopened: "reopened",
};

function githubEvent(event: string, body: unknown): IntakeEvent | null {
  if (event === "pull_request") {
    const parsed = githubPullPayload.safeParse(body);
    const action = parsed.success ? githubPullActions[parsed.data.action] : undefined;
    if (!parsed.success || !action) return null;
    const pr = parsed.data.pull_request;
    return { kind: "pull_request", action, merged: pr.merged === true, issue: { ...fromGithubIssue(pr), id: `pr:${pr.id}` } };
  }
  if (event === "pull_request_review_comment") {
    const parsed = githubReviewCommentPayload.safeParse(body);
    if (!parsed.success || !commentActions.has(parsed.data.action)) return null;
    const { action, pull_request: pr, comment } = parsed.data;
    // Review comments are numbered apart from issue comments: prefixed, the two never meet.
    return { kind: "request_comment", action: action as "created" | "deleted", request: { id: `pr:${pr.id}`, number: pr.number }, comment: { ...commentOf(comment), id: `rc:${comment.id}` } };
  }
  const parsed = githubPayload.safeParse(body);
  if (!parsed.success) return null;
  const { action, issue, comment } = parsed.data;
  if (issue.pull_request !== undefined) {
    // A comment on a pull request's conversation: GitHub sends it as an issue_comment.
    if (event !== "issue_comment" || !comment || !commentActions.has(action)) return null;
    return { kind: "request_comment", action: action as "created" | "deleted", request: { id: null, number: issue.number }, comment: commentOf(comment) };
  }
  if (event === "issues") {
    const mapped = githubIssueActions[action];
    return mapped ? { kind: "issue", action: mapped, issue: fromGithubIssue(issue) } : null;
  }
  if (event === "issue_comment" && comment && (action === "created" || action === "deleted")) {
    return { kind: "comment", action, issue: fromGithubIssue(issue), comment: commentOf(comment) };
  }
  return null;
}

const gitlabUser = z.object({ username: z.string().min(1) });
const gitlabIssue = z.object({
  id: z.number().int(),
  iid: z.number().int().positive(),
  title: z.string(),
  description: text,
  /** The note hook's issue carries no url. */
  url: text,
  state: z.string(),
  author_id: z.number().int().nullish(),
  due_date: z.string().nullish(),
  action: z.string().optional(),
  updated_at: instant,
});
const gitlabLabels = z.array(z.object({ title: z.string() })).nullish();
const gitlabIssuePayload = z.object({ object_kind: z.literal("issue"), user: gitlabUser, object_attributes: gitlabIssue, labels: gitlabLabels });
const gitlabNotePayload = z.object({
  object_kind: z.literal("note"),
  user: gitlabUser,
  object_attributes: z.object({ id: z.number().int(), note: text, noteable_type: z.string(), action: z.string().optional(), author_id: z.number().int().nullish(), updated_at: instant }),
  issue: gitlabIssue.extend({ labels: gitlabLabels }).optional(),
  merge_request: z.object({ id: z.number().int(), iid: z.number().int().positive() }).optional(),
});

function fromGitlabIssue(i: z.output<typeof gitlabIssue>, author: string, labels: z.output<typeof gitlabLabels>): SourceIssue {
  return {
    id: String(i.id),
    number: i.iid,
    title: i.title,
    body: i.description,
    url: i.url,
    author,
    outsider: null,
    authorId: i.author_id ?? null,
    labels: (labels ?? []).map((l) => l.title),
    dueAt: i.due_date ?? null,
    open: i.state === "opened",
    updatedAt: i.updated_at,
  };
}

const gitlabIssueActions: Record<string, Extract<IntakeEvent, { kind: "issue" }>["action"]> = {
  open: "opened",
  update: "changed",
  close: "closed",
  reopen: "reopened",
};

const gitlabMergePayload = z.object({ object_kind: z.literal("merge_request"), user: gitlabUser, object_attributes: gitlabIssue, labels: gitlabLabels });

/** GitLab's merge request actions; approvals and the like change nothing the review item shows. */
const gitlabMergeActions: Record<string, Extract<IntakeEvent, { kind: "pull_request" }>["action"]> = {
  open: "opened",
  update: "changed",
  close: "closed",
  merge: "closed",
  reopen: "reopened",
};

function gitlabEvent(event: string, body: unknown): IntakeEvent | null {
  if (event === "Merge Request Hook") {
    const parsed = gitlabMergePayload.safeParse(body);
    if (!parsed.success) return null;
    const { object_attributes: mr, user, labels } = parsed.data;
    const action = gitlabMergeActions[mr.action ?? ""];
    if (!action) return null;
    return { kind: "pull_request", action, merged: mr.state === "merged", issue: { ...fromGitlabIssue(mr, user.username, labels), id: `pr:${mr.id}` } };
  }
  if (event === "Issue Hook") {
    const parsed = gitlabIssuePayload.safeParse(body);
    if (!parsed.success) return null;
    const { object_attributes: i, user, labels } = parsed.data;
    const mapped = gitlabIssueActions[i.action ?? ""];
    // The issue hook names the acting user; on open that is the author.
    return mapped ? { kind: "issue", action: mapped, issue: fromGitlabIssue(i, user.username, labels) } : null;
  }
  if (event === "Note Hook") {
    const parsed = gitlabNotePayload.safeParse(body);
    if (!parsed.success) return null;
    const { object_attributes: note, user, issue, merge_request: mr } = parsed.data;
    if (note.action !== undefined && note.action !== "create") return null;
    // GitLab says nothing of the note author's access: null asks the provider (server/intake/process.ts).
    const comment: SourceComment = { id: String(note.id), body: note.note, author: user.username, outsider: null, authorId: note.author_id ?? null, updatedAt: note.updated_at };
    if (note.noteable_type === "MergeRequest" && mr) {
      return { kind: "request_comment", action: "created", request: { id: `pr:${mr.id}`, number: mr.iid }, comment };
    }
    if (!issue || note.noteable_type !== "Issue") return null;
    return {
      kind: "comment",
      action: "created",
      issue: fromGitlabIssue(issue, user.username, issue.labels),
      comment,
    };
  }
  return null;
}

/** The delivery as an intake event, or null for one intake does nothing with. */
export function intakeEventOf(provider: ConnectorProvider, event: string, body: unknown): IntakeEvent | null {
  return provider === "github" ? githubEvent(event, body) : gitlabEvent(event, body);
}
