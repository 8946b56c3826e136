import type { activity, attachmentFiles, attachments, checkpoints, comments, issueLabels, issues, linearLinks } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { invalidInput } from "../errors.ts";
import { decodeFile, downloadPath } from "../issues/attachments-files.ts";
import { sniffContentType } from "../issues/attachments-sniff.ts";
import { rankingColumns, reviewClockOf, reviewSinceAfter } from "../issues/levels.ts";
import { isTerminal } from "../issues/store.ts";
import type { ExportIssue } from "./format.ts";

/**
 * The rows one exported issue becomes in the import of an export (import-run.ts): the issue,
 * its comments, attachments and their files, checkpoints, labels and Linear link, buffered for
 * the next flush; its parent and relations kept until every issue is in.
 */

type Row<T extends { $inferInsert: unknown }> = T["$inferInsert"];

/** Rows waiting for the run's next flush, which writes them in this order (parents before children). */
export interface ImportBuffer {
  issues: Row<typeof issues>[];
  linearLinks: Row<typeof linearLinks>[];
  issueLabels: Row<typeof issueLabels>[];
  comments: Row<typeof comments>[];
  attachments: Row<typeof attachments>[];
  attachmentFiles: Row<typeof attachmentFiles>[];
  checkpoints: Row<typeof checkpoints>[];
  activity: Row<typeof activity>[];
}

/** What of the run an issue's rows read and add to. */
export interface IssueTarget {
  readonly now: Date;
  readonly newId: () => string;
  /** The new id for an old one, made on first sight. */
  idFor(old: string): string;
  /** The new id of an old one already seen, or null. */
  known(old: string | null | undefined): string | null;
  readonly projectByPrefix: Map<string, string>;
  readonly labelByName: Map<string, string>;
  readonly issueByIdentifier: Map<string, string>;
  readonly parents: { id: string; parent: string }[];
  readonly edges: { sourceId: string; target: string; type: "blocks" | "related" | "duplicate"; createdAt: Date }[];
  readonly buffer: ImportBuffer;
  readonly counts: { issues: number; comments: number };
}

export function bufferIssue(run: IssueTarget, orgId: string, cipher: OrgCipher, i: ExportIssue): void {
  const projectId = run.projectByPrefix.get(i.project);
  if (!projectId) throw invalidInput(`issue ${i.identifier} is in project ${i.project}, which the export does not list`, "Export the org again; the file is incomplete.");
  const id = run.idFor(i.id);
  run.issueByIdentifier.set(i.identifier, id);
  const dueAt = i.dueAt ? new Date(i.dueAt) : null;
  const dueSetAt = i.dueSetAt ? new Date(i.dueSetAt) : null;
  const terminal = isTerminal(i.status);
  // The review clock (decision 073): the export's, or (an export from before it) from the import.
  const exported = i.reviewSince ? new Date(i.reviewSince) : null;
  const triage = i.triage ?? null;
  const reviewSince = reviewSinceAfter({ status: null, triage: null, reviewSince: exported }, { status: i.status, triage }, run.now, exported ?? run.now);
  const ranking = rankingColumns(i.priority, dueAt, dueSetAt, terminal, run.now, reviewClockOf({ status: i.status, reviewSince }));
  run.buffer.issues.push({
    id,
    orgId,
    projectId,
    number: i.number,
    identifier: i.identifier,
    titleEnc: cipher.encrypt(i.title)!,
    bodyEnc: cipher.encrypt(i.body),
    noDependencyEnc: cipher.encrypt(i.noDependency),
    cancelReasonEnc: cipher.encrypt(i.cancelReason),
    work: i.work,
    changeType: i.changeType ?? null,
    status: i.status,
    priority: i.priority,
    triage: i.triage ?? null,
    assigneeId: run.known(i.assigneeId),
    authorId: run.known(i.authorId),
    submitterId: run.known(i.submitterId),
    dueAt,
    dueSetAt,
    ...ranking,
    effectiveLevel: ranking.ownLevel,
    effectiveDueAt: terminal ? null : dueAt,
    fence: i.fence,
    firstClaimedAt: i.firstClaimedAt ? new Date(i.firstClaimedAt) : null,
    reviewSince,
    branch: i.branch,
    verification: i.verification ?? null,
    verificationAt: i.verification ? new Date(i.updatedAt) : null,
    evidenceCommit: i.evidence?.commit ?? null,
    evidenceBranch: i.evidence?.branch ?? null,
    evidencePr: i.evidence?.pr ?? null,
    createdAt: new Date(i.createdAt),
    updatedAt: new Date(i.updatedAt),
  });
  run.counts.issues++;
  if (i.parent) run.parents.push({ id, parent: i.parent });
  // The link keeps the estimate; an empty hash makes a later Linear re-import compare it afresh.
  if (i.linear) run.buffer.linearLinks.push({ orgId, linearId: i.linear.id, kind: "issue", retascId: id, hash: "", estimate: i.linear.estimate });
  for (const r of i.relations) run.edges.push({ sourceId: id, target: r.target, type: r.type, createdAt: new Date(r.createdAt) });
  for (const name of i.labels) {
    const labelId = run.labelByName.get(name);
    if (labelId) run.buffer.issueLabels.push({ orgId, issueId: id, labelId });
  }
  for (const c of i.comments) {
    run.buffer.comments.push({
      id: run.idFor(c.id),
      orgId,
      issueId: id,
      parentId: c.parentId ? run.idFor(c.parentId) : null,
      authorId: run.known(c.authorId),
      keyId: run.known(c.keyId),
      runtime: c.runtime,
      bodyEnc: cipher.encrypt(c.body)!,
      retractedAt: c.retractedAt ? new Date(c.retractedAt) : null,
      retractNoteEnc: cipher.encrypt(c.retractNote),
      createdAt: new Date(c.createdAt),
    });
    run.counts.comments++;
  }
  for (const a of i.attachments) {
    const attachmentId = run.newId();
    run.buffer.attachments.push({
      id: attachmentId,
      orgId,
      issueId: id,
      urlEnc: cipher.encrypt(a.file ? downloadPath(attachmentId) : (a.url ?? ""))!,
      titleEnc: cipher.encrypt(a.title),
      authorId: run.known(a.authorId),
      keyId: run.known(a.keyId),
      obsoletedAt: a.obsoletedAt ? new Date(a.obsoletedAt) : null,
      obsoleteReasonEnc: cipher.encrypt(a.obsoleteReason),
      createdAt: new Date(a.createdAt),
    });
    if (a.file) {
      // Decoded and typed as save_attachment_file does: strict base64, at most 10 MiB, the type sniffed from the bytes.
      const bytes = decodeFile(a.file.contentBase64);
      run.buffer.attachmentFiles.push({ attachmentId, orgId, contentType: sniffContentType(bytes), sizeBytes: bytes.length, contentEnc: cipher.encryptBytes(bytes) });
    }
  }
  for (const c of i.checkpoints) {
    run.buffer.checkpoints.push({
      id: run.newId(),
      orgId,
      issueId: id,
      userId: run.known(c.userId),
      keyId: run.known(c.keyId),
      runtime: c.runtime,
      doneEnc: cipher.encrypt(c.done),
      nextEnc: cipher.encrypt(c.next),
      gotchasEnc: cipher.encrypt(c.gotchas),
      noteEnc: cipher.encrypt(c.note),
      branch: c.branch,
      createdAt: new Date(c.createdAt),
    });
  }
}
