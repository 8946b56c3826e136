import type { z } from "zod";
import { and, asc, eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { attachmentFiles, attachments, issues } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { notFound } from "../errors.ts";
import { newId } from "../orgs/index.ts";
import { reachable, type Reach } from "../orgs/scope.ts";
import { getAttachmentInput, listAttachmentsInput, obsoleteAttachmentInput, saveAttachmentInput } from "./schemas.ts";
import { findIssue } from "./lookups.ts";
import { inTransaction } from "./store.ts";
import { meter } from "../usage/meter.ts";

/** What a file attachment adds to its row (attachment_files, without the content). */
export type FileFacts = Pick<typeof attachmentFiles.$inferSelect, "contentType" | "sizeBytes">;
/** The columns of attachment_files a listing reads: never the content. */
const fileFacts = { contentType: attachmentFiles.contentType, sizeBytes: attachmentFiles.sizeBytes };

/**
 * Attachments: links, and files (attachments-files.ts) whose url is their Dash download and
 * title their filename. Obsoleting is the delete-equivalent: the record stays, flagged with a reason.
 */
export function attachmentView(cipher: OrgCipher, row: typeof attachments.$inferSelect, issue: string, file: FileFacts | null) {
  return {
    id: row.id,
    issue,
    kind: file ? ("file" as const) : ("link" as const),
    url: cipher.decrypt(row.urlEnc),
    title: cipher.decrypt(row.titleEnc),
    contentType: file?.contentType ?? null,
    size: file?.sizeBytes ?? null,
    authorId: row.authorId,
    obsolete: row.obsoletedAt !== null,
    obsoleteReason: cipher.decrypt(row.obsoleteReasonEnc),
    createdAt: row.createdAt.toISOString(),
  };
}

export async function saveAttachment(ctx: Ctx, raw: z.input<typeof saveAttachmentInput>) {
  const input = saveAttachmentInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const { tx, now, cipher } = scope;
    const issue = await findIssue(tx, ctx.principal, input.issue);
    const [row] = await tx
      .insert(attachments)
      .values({
        id: newId(),
        orgId: ctx.principal.orgId,
        issueId: issue.id,
        urlEnc: cipher.encrypt(input.url),
        titleEnc: cipher.encrypt(input.title ?? null),
        authorId: ctx.principal.userId,
        keyId: ctx.principal.keyId,
        createdAt: now,
      })
      .returning();
    await recordActivity(scope, { issueId: issue.id, kind: "attachment_added", detail: { attachmentId: row!.id } });
    meter(scope, "save_attachment", "work", issue.id);
    return attachmentView(cipher, row!, issue.identifier, null);
  });
}

export async function listAttachments(ctx: Ctx, raw: z.input<typeof listAttachmentsInput>) {
  const input = listAttachmentsInput.parse(raw);
  const issue = await findIssue(ctx.db, ctx.principal, input.issue);
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const rows = await ctx.db
    .select({ attachment: attachments, file: fileFacts })
    .from(attachments)
    .leftJoin(attachmentFiles, eq(attachmentFiles.attachmentId, attachments.id))
    .where(eq(attachments.issueId, issue.id))
    .orderBy(asc(attachments.createdAt), asc(attachments.id));
  return { issue: issue.identifier, attachments: rows.map((r) => attachmentView(cipher, r.attachment, issue.identifier, r.file)) };
}

export async function findAttachment(db: Db, reach: Reach, id: string) {
  const rows = await db
    .select({ attachment: attachments, identifier: issues.identifier, file: fileFacts })
    .from(attachments)
    .innerJoin(issues, eq(issues.id, attachments.issueId))
    .leftJoin(attachmentFiles, eq(attachmentFiles.attachmentId, attachments.id))
    .where(and(eq(attachments.id, id), reachable(reach, issues)));
  if (!rows[0]) throw notFound(`attachment ${id}`);
  return rows[0];
}

export async function getAttachment(ctx: Ctx, raw: z.input<typeof getAttachmentInput>) {
  const input = getAttachmentInput.parse(raw);
  const { attachment, identifier, file } = await findAttachment(ctx.db, ctx.principal, input.attachment);
  return attachmentView(await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId), attachment, identifier, file);
}

export async function obsoleteAttachment(ctx: Ctx, raw: z.input<typeof obsoleteAttachmentInput>) {
  const input = obsoleteAttachmentInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const { tx, now, cipher } = scope;
    const { attachment, identifier } = await findAttachment(tx, ctx.principal, input.attachment);
    if (!attachment.obsoletedAt) {
      await tx
        .update(attachments)
        .set({ obsoletedAt: now, obsoleteReasonEnc: cipher.encrypt(input.reason) })
        .where(eq(attachments.id, attachment.id));
      await recordActivity(scope, { issueId: attachment.issueId, kind: "attachment_obsoleted", detail: { attachmentId: attachment.id } });
      meter(scope, "obsolete_attachment", "bookkeeping", attachment.issueId);
    }
    const updated = await findAttachment(tx, ctx.principal, attachment.id);
    return attachmentView(cipher, updated.attachment, identifier, updated.file);
  });
}
