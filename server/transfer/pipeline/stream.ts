import type { IssueStatus } from "../../../db/schema/index.ts";

/**
 * What every source's adapter yields, page by page (decision 047): people, labels, issues with
 * Markdown bodies, threaded comments, relations, attachments, with the source's timestamps and
 * ids. The apply (./apply.ts, ./link.ts) reads only this, so a source is one file of reading and
 * one of mapping. Ids are the source's own, namespaced by the adapter where they could collide
 * with another source's (Linear's UUIDs are kept bare, as links made before this pipeline hold them).
 */
export interface SourcePerson {
  id: string;
  name: string;
  email: string | null;
}

export interface SourceLabel {
  id: string;
  name: string;
  color: string;
}

export interface SourceComment {
  id: string;
  /** Markdown. */
  body: string;
  createdAt: string;
  /** Archived or deleted at the source: the comment is retracted here at that time. */
  retractedAt: string | null;
  parentId: string | null;
  author: SourcePerson | null;
}

export interface SourceAttachment {
  id: string;
  /** A file's name when it is one. */
  title: string;
  url: string;
  createdAt: string;
  author: SourcePerson | null;
  /** Set by the adapter when `url` is a file on the source's own host: fetched with the credential, `size` (when the source says) checked first. */
  file?: { size: number | null };
  /** The issue's body or a comment names `url` inline: once the file is here, the text names it here instead (./inline-files.ts). */
  inline?: true;
  /** Set by staging (./files.ts): the file is staged for this run, or came over in an earlier one. */
  asFile?: "staged" | "here";
  /** Set by staging: why it stays a link (a link at the source, over the size limit, a download that failed). */
  keptAsLink?: "link" | "tooLarge" | "failed";
}

export type SourceRelationType = "blocks" | "related" | "duplicate";

/** An edge from the issue that carries it: `blocks` means this issue blocks the target. */
export interface SourceRelation {
  id: string;
  type: SourceRelationType;
  targetId: string;
  createdAt: string;
}

export interface SourceIssue {
  id: string;
  /** The source's number; kept as the Retasc number when the source's prefix is the project's. */
  number: number | null;
  /** The source's own identifier (ENG-12, a CSV row's id): the report maps it to ours. */
  key: string;
  title: string;
  /** Markdown, or null. */
  body: string | null;
  status: IssueStatus;
  /** 0 none, 1 urgent … 4 low (Retasc's numbering). */
  priority: number;
  /** The source's own status and priority names, as the dry run's mapping shows them. */
  sourceStatus?: string;
  sourcePriority?: string;
  estimate: number | null;
  /** A calendar date (YYYY-MM-DD): due at the end of that day in the org's zone. */
  dueDate: string | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  completedAt: string | null;
  canceledAt: string | null;
  parentId: string | null;
  creator: SourcePerson | null;
  assignee: SourcePerson | null;
  labels: SourceLabel[];
  comments: SourceComment[];
  attachments: SourceAttachment[];
  relations: SourceRelation[];
}

/**
 * The owner's mapping of a source's own status and priority names (`sourceStatus`,
 * `sourcePriority`) to ours, over the adapter's defaults; the dry run shows both, the apply takes
 * what the run was started with.
 */
export interface SourceMapping {
  statuses?: Record<string, IssueStatus>;
  priorities?: Record<string, number>;
}

export interface SourcePage {
  issues: SourceIssue[];
  /** Where the next page starts, null on the last one. */
  next: string | null;
}

/** What a reader tells the run while it reads: a wait the source asked for (a 429's Retry-After), shown on the run until the next page. */
export interface ReadNotice {
  waiting(ms: number): Promise<void>;
}

/** A downloaded file attachment, or why it stays a link (./files.ts downloads it). */
export type Download = { bytes: Buffer } | { keptAsLink: "tooLarge" | "failed" };

/** A reader's way to fetch a file attachment with its credential (a source without files has none). */
export type FetchFile = (attachment: SourceAttachment) => Promise<Download>;

/** A source read for one run: its pages in order, the credential held inside it for the run only. */
export interface SourceReader {
  /** Ghosts are kept per (org, source, person id). */
  source: string;
  readPage(cursor: string | null, notice?: ReadNotice): Promise<SourcePage>;
  /** Downloads a file attachment with the credential, from the source's own origin only (./files.ts); absent when the source has no files. */
  fetchFile?: FetchFile;
}

/** A source already in memory (a file that came with the request) read in pages of `perPage`. */
export function pagedReader(source: string, issues: SourceIssue[], perPage: number): SourceReader {
  return {
    source,
    async readPage(cursor) {
      const at = Number(cursor ?? 0);
      return { issues: issues.slice(at, at + perPage), next: at + perPage < issues.length ? String(at + perPage) : null };
    },
  };
}

/** The tracker sources read with a credential (CSV is a file): what run_import and a kept credential name. */
export const importSourceNames = ["linear", "jira", "asana", "shortcut", "clickup"] as const;
