import { and, asc, eq, gt, inArray } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { attachmentFiles, attachments, checkpoints, comments, issueLabels, issues, labels, linearLinks, relations } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";
import type { IssueRow } from "../issues/types.ts";
import { evidenceOf } from "../issues/views.ts";
import { iso, type ExportAttachment, type ExportCheckpoint, type ExportComment, type ExportIssue } from "./format.ts";

/**
 * Reads an org's issues for export in keyset pages, decrypted, each with what hangs on it (as
 * ./read-org.ts reads the rest: committed data page by page, memory flat however large the org).
 */
export const ISSUE_PAGE = 200;

const groupBy = <T>(rows: T[], key: (row: T) => string): Map<string, T[]> => {
  const map = new Map<string, T[]>();
  for (const row of rows) {
    const list = map.get(key(row));
    if (list) list.push(row);
    else map.set(key(row), [row]);
  }
  return map;
};

/** Pages of one project's issues in number order (the issues_project_number_uq index). */
export async function* issueRowPages(db: Db, projectId: string, pageSize = ISSUE_PAGE): AsyncGenerator<IssueRow[]> {
  let after = 0;
  for (;;) {
    const page = await db
      .select()
      .from(issues)
      .where(and(eq(issues.projectId, projectId), gt(issues.number, after)))
      .orderBy(asc(issues.number))
      .limit(pageSize);
    if (page.length === 0) return;
    yield page;
    after = page[page.length - 1]!.number;
    if (page.length < pageSize) return;
  }
}

/** Identifiers of the given issue ids (parents, relation targets), whichever project they are in. */
async function identifiersOf(db: Db, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.select({ id: issues.id, identifier: issues.identifier }).from(issues).where(inArray(issues.id, ids));
  return new Map(rows.map((r) => [r.id, r.identifier]));
}

/**
 * One page of issues with everything hung on them: labels, edges out, comments, attachments,
 * checkpoints. `attachments: false` (the CSV tables, which show none) skips reading and
 * decrypting the attachments and their files.
 */
export async function fullIssues(db: Db, cipher: OrgCipher, page: IssueRow[], projectPrefix: string, options = { attachments: true }): Promise<ExportIssue[]> {
  const ids = page.map((i) => i.id);
  const [labelRows, relationRows, commentRows, attachmentRows, checkpointRows, linearRows] = await Promise.all([
    db
      .select({ issueId: issueLabels.issueId, name: labels.name })
      .from(issueLabels)
      .innerJoin(labels, eq(labels.id, issueLabels.labelId))
      .where(inArray(issueLabels.issueId, ids))
      .orderBy(asc(labels.name)),
    db.select().from(relations).where(inArray(relations.sourceId, ids)).orderBy(asc(relations.createdAt), asc(relations.id)),
    db.select().from(comments).where(inArray(comments.issueId, ids)).orderBy(asc(comments.createdAt), asc(comments.id)),
    options.attachments
      ? db
          .select({ attachment: attachments, file: attachmentFiles })
          .from(attachments)
          .leftJoin(attachmentFiles, eq(attachmentFiles.attachmentId, attachments.id))
          .where(inArray(attachments.issueId, ids))
          .orderBy(asc(attachments.createdAt), asc(attachments.id))
      : [],
    db.select().from(checkpoints).where(inArray(checkpoints.issueId, ids)).orderBy(asc(checkpoints.createdAt), asc(checkpoints.id)),
    db
      .select({ issueId: linearLinks.retascId, linearId: linearLinks.linearId, estimate: linearLinks.estimate })
      .from(linearLinks)
      .where(and(inArray(linearLinks.retascId, ids), eq(linearLinks.kind, "issue"))),
  ]);
  const linearOf = new Map(linearRows.map((r) => [r.issueId, { id: r.linearId, estimate: r.estimate }]));
  const named = await identifiersOf(db, [
    ...new Set([...page.flatMap((i) => (i.parentId ? [i.parentId] : [])), ...relationRows.map((r) => r.targetId)]),
  ]);
  const labelsOf = groupBy(labelRows, (r) => r.issueId);
  const relationsOf = groupBy(relationRows, (r) => r.sourceId);
  const commentsOf = groupBy(commentRows, (r) => r.issueId);
  const attachmentsOf = groupBy(attachmentRows, (r) => r.attachment.issueId);
  const checkpointsOf = groupBy(checkpointRows, (r) => r.issueId);
  return page.map((i) => ({
    id: i.id,
    identifier: i.identifier,
    project: projectPrefix,
    number: i.number,
    title: cipher.decrypt(i.titleEnc)!,
    body: cipher.decrypt(i.bodyEnc),
    work: i.work,
    changeType: i.changeType,
    status: i.status,
    priority: i.priority,
    triage: i.triage,
    assigneeId: i.assigneeId,
    authorId: i.authorId,
    submitterId: i.submitterId,
    parent: i.parentId ? (named.get(i.parentId) ?? null) : null,
    noDependency: cipher.decrypt(i.noDependencyEnc),
    cancelReason: cipher.decrypt(i.cancelReasonEnc),
    dueAt: iso(i.dueAt),
    dueSetAt: iso(i.dueSetAt),
    fence: i.fence,
    firstClaimedAt: iso(i.firstClaimedAt),
    reviewSince: iso(i.reviewSince),
    branch: i.branch,
    verification: i.verification,
    evidence: evidenceOf(i),
    createdAt: i.createdAt.toISOString(),
    updatedAt: i.updatedAt.toISOString(),
    linear: linearOf.get(i.id) ?? null,
    labels: (labelsOf.get(i.id) ?? []).map((l) => l.name),
    relations: (relationsOf.get(i.id) ?? []).flatMap((r) => {
      const target = named.get(r.targetId);
      return target ? [{ type: r.type, target, createdAt: r.createdAt.toISOString() }] : [];
    }),
    comments: (commentsOf.get(i.id) ?? []).map(
      (c): ExportComment => ({
        id: c.id,
        parentId: c.parentId,
        authorId: c.authorId,
        keyId: c.keyId,
        runtime: c.runtime,
        body: cipher.decrypt(c.bodyEnc)!,
        createdAt: c.createdAt.toISOString(),
        retractedAt: iso(c.retractedAt),
        retractNote: cipher.decrypt(c.retractNoteEnc),
      }),
    ),
    attachments: (attachmentsOf.get(i.id) ?? []).map(
      ({ attachment: a, file }): ExportAttachment => ({
        url: file ? null : cipher.decrypt(a.urlEnc),
        title: cipher.decrypt(a.titleEnc),
        authorId: a.authorId,
        keyId: a.keyId,
        createdAt: a.createdAt.toISOString(),
        obsoletedAt: iso(a.obsoletedAt),
        obsoleteReason: cipher.decrypt(a.obsoleteReasonEnc),
        file: file
          ? { contentType: file.contentType, sizeBytes: file.sizeBytes, contentBase64: cipher.decryptBytes(file.contentEnc).toString("base64") }
          : null,
      }),
    ),
    checkpoints: (checkpointsOf.get(i.id) ?? []).map(
      (c): ExportCheckpoint => ({
        userId: c.userId,
        keyId: c.keyId,
        runtime: c.runtime,
        done: cipher.decrypt(c.doneEnc),
        next: cipher.decrypt(c.nextEnc),
        gotchas: cipher.decrypt(c.gotchasEnc),
        note: cipher.decrypt(c.noteEnc),
        branch: c.branch,
        createdAt: c.createdAt.toISOString(),
      }),
    ),
  }));
}

/** The issues that block each of these (`blocks` edges into them), by identifier: the CSV's blocked_by. */
export async function blockersOf(db: Db, ids: string[]): Promise<Map<string, string[]>> {
  const rows = await db
    .select({ targetId: relations.targetId, identifier: issues.identifier })
    .from(relations)
    .innerJoin(issues, eq(issues.id, relations.sourceId))
    .where(and(inArray(relations.targetId, ids), eq(relations.type, "blocks")))
    .orderBy(asc(issues.identifier));
  const map = new Map<string, string[]>();
  for (const [id, list] of groupBy(rows, (r) => r.targetId)) map.set(id, list.map((r) => r.identifier));
  return map;
}
