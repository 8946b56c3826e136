import type { ChangeType } from "../../constants/change-types.ts";
import type { VerificationSettings } from "../verification/settings.ts";
/**
 * The JSON export format, version 1 (docs/export-format.md). One JSON document whose records
 * are written one per line, so it streams out in flat memory and reads back line by line; any
 * JSON tool can still read it whole.
 */
export const EXPORT_FORMAT = "retasc-export";
export const EXPORT_VERSION = 1;

/** What an export → import → export round trip may change: every id, and these fields. */
export const DIFFERS_ON_IMPORT = ["exportedAt", "org.id", "org.name", "org.createdAt", "every id and *Id value"] as const;

/** The sections in the order they are written (and must be read: later ones refer to earlier ones). */
export const SECTIONS = ["people", "projects", "labels", "agents", "issues", "activity"] as const;
export type Section = (typeof SECTIONS)[number];

export type Instant = string;

export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  version: number;
  exportedAt: Instant;
  differsOnImport: readonly string[];
  org: { id: string; name: string; timeZone: string; createdAt: Instant };
}

/** Everyone the org's rows name: its members, and people who left but whose history stays. */
export interface ExportPerson {
  id: string;
  email: string;
  name: string;
  member: { role: "owner" | "admin" | "member"; status: "active" | "suspended"; since: Instant } | null;
}

/** An agent key's record; never its secret or hash. */
export interface ExportAgent {
  id: string;
  userId: string;
  project: string | null;
  runtime: string;
  keyPrefix: string;
  claimCap: number | null;
  parentKeyId: string | null;
  createdAt: Instant;
  lastUsedAt: Instant | null;
  revokedAt: Instant | null;
  /** When a session key expires; absent from exports written before keys could expire. */
  expiresAt?: Instant | null;
}

export interface ExportProject {
  prefix: string;
  name: string;
  nextNumber: number;
  createdAt: Instant;
  /** How it verifies finishes (decision 045); absent from exports written before it: the defaults. */
  verification?: VerificationSettings;
  /** Prefixes it had before a rename, which still name its issues (decision 089); absent: none. */
  oldPrefixes?: string[];
}

export interface ExportLabel {
  name: string;
  color: string | null;
  createdAt: Instant;
}

export interface ExportComment {
  id: string;
  parentId: string | null;
  authorId: string | null;
  keyId: string | null;
  runtime: string | null;
  body: string;
  createdAt: Instant;
  retractedAt: Instant | null;
  retractNote: string | null;
}

export interface ExportAttachment {
  /** Null for a file: its download path follows from the attachment. */
  url: string | null;
  title: string | null;
  authorId: string | null;
  keyId: string | null;
  createdAt: Instant;
  obsoletedAt: Instant | null;
  obsoleteReason: string | null;
  file: { contentType: string; sizeBytes: number; contentBase64: string } | null;
}

export interface ExportCheckpoint {
  userId: string | null;
  keyId: string | null;
  runtime: string | null;
  done: string | null;
  next: string | null;
  gotchas: string | null;
  note: string | null;
  branch: string | null;
  createdAt: Instant;
}

/** An edge out of this issue, as stored: `blocks` (this blocks target), `related`, `duplicate`. */
export interface ExportRelation {
  type: "blocks" | "related" | "duplicate";
  target: string;
  createdAt: Instant;
}

export interface ExportIssue {
  id: string;
  identifier: string;
  project: string;
  number: number;
  title: string;
  body: string | null;
  work: boolean;
  /** The kind of change (decision 059), one of constants/change-types.ts; null when none was said. Absent in exports written before it. */
  changeType?: ChangeType | null;
  status: "todo" | "doing" | "blocked" | "review" | "done" | "canceled";
  priority: number;
  /** An outsider's issue (intake) waiting for a member to accept it, or accepted; null for the team's own. */
  triage: "pending" | "accepted" | null;
  assigneeId: string | null;
  authorId: string | null;
  submitterId: string | null;
  parent: string | null;
  noDependency: string | null;
  cancelReason: string | null;
  dueAt: Instant | null;
  dueSetAt: Instant | null;
  fence: number;
  firstClaimedAt: Instant | null;
  /** When it last became a review a reviewer can take (decision 073): its review age counts from it. Absent in exports written before it. */
  reviewSince?: Instant | null;
  branch: string | null;
  /** CI's word on the last finish (decision 045); null when never verified. Absent in exports written before it. */
  verification?: "pending" | "passed" | "failed" | null;
  /** What the last finish said it delivered; null when it said nothing. Absent in exports written before it. */
  evidence?: { commit: string | null; branch: string | null; pr: string | null } | null;
  createdAt: Instant;
  updatedAt: Instant;
  /** The Linear issue it was imported from, with Linear's estimate (points), which Retasc's issues have no field for; null when not from Linear. */
  linear: { id: string; estimate: number | null } | null;
  labels: string[];
  relations: ExportRelation[];
  comments: ExportComment[];
  attachments: ExportAttachment[];
  checkpoints: ExportCheckpoint[];
}

export interface ExportActivity {
  issue: string | null;
  kind: string;
  actorId: string | null;
  keyId: string | null;
  runtime: string | null;
  facts: Record<string, unknown> | null;
  detail: Record<string, unknown> | null;
  createdAt: Instant;
}

export interface SectionRecord {
  people: ExportPerson;
  agents: ExportAgent;
  projects: ExportProject;
  labels: ExportLabel;
  issues: ExportIssue;
  activity: ExportActivity;
}

export const iso = (d: Date | null): Instant | null => (d ? d.toISOString() : null);
