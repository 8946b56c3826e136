import { z } from "zod";
import { and, eq } from "drizzle-orm";
import { attachmentFiles, attachments } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { invalidInput, notFound } from "../errors.ts";
import { newId } from "../orgs/index.ts";
import { attachmentView, findAttachment } from "./attachments.ts";
import { downloadHeaders, sniffContentType } from "./attachments-sniff.ts";
import { identifierSchema } from "./schemas.ts";
import { findIssue } from "./lookups.ts";
import { inTransaction } from "./store.ts";
import { meter } from "../usage/meter.ts";

/** The largest file an agent may attach, decoded: screenshots, logs and traces fit; a build artifact belongs elsewhere. */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
/** Its base64, which the /mcp body limit must admit with room for the JSON around it (server/http/limits.ts). */
export const MAX_FILE_BASE64_CHARS = Math.ceil(MAX_FILE_BYTES / 3) * 4;

/** Where the Dash serves a file (app/routes/dash.attachments.$id.ts); the file's `url`. */
export const downloadPath = (attachmentId: string) => `/dash/attachments/${attachmentId}`;

export const saveAttachmentFileInput = z.object({
  issue: identifierSchema,
  filename: z
    .string()
    .trim()
    .min(1)
    .max(255)
    .regex(/^[^/\\\u0000-\u001f\u007f]+$/, "a filename has no slashes or control characters"),
  // Checked and decoded by the service: a bad or oversized value gets its own message, not a regex's.
  contentBase64: z.string(),
});
export const getAttachmentFileInput = z.object({ attachment: z.string().uuid() });

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Decodes strict base64 (line breaks tolerated, as `base64` wraps its output) of at most MAX_FILE_BYTES. */
export function decodeFile(contentBase64: string): Buffer {
  const text = contentBase64.replace(/\s+/g, "");
  const hint = "Send the file's bytes base64-encoded (A-Z a-z 0-9 + /, = padding), at most 10 MiB (10485760 bytes) decoded.";
  if (text.length > MAX_FILE_BASE64_CHARS + 4) {
    throw invalidInput(`the file is about ${Math.floor((text.length * 3) / 4)} bytes; files are at most ${MAX_FILE_BYTES} bytes (10 MiB)`, hint);
  }
  if (text.length === 0 || text.length % 4 !== 0 || !BASE64.test(text)) throw invalidInput("contentBase64 is not valid base64", hint);
  const bytes = Buffer.from(text, "base64");
  if (bytes.length > MAX_FILE_BYTES) {
    throw invalidInput(`the file is ${bytes.length} bytes; files are at most ${MAX_FILE_BYTES} bytes (10 MiB)`, hint);
  }
  return bytes;
}

/** Attaches a file: an attachments row (title: the filename; url: its Dash download) and its content, sealed under the org's key. */
export async function saveAttachmentFile(ctx: Ctx, raw: z.input<typeof saveAttachmentFileInput>) {
  const input = saveAttachmentFileInput.parse(raw);
  const bytes = decodeFile(input.contentBase64);
  const contentType = sniffContentType(bytes);
  return inTransaction(ctx, async (scope) => {
    const { tx, now, cipher } = scope;
    const issue = await findIssue(tx, ctx.principal, input.issue);
    const id = newId();
    const [row] = await tx
      .insert(attachments)
      .values({
        id,
        orgId: ctx.principal.orgId,
        issueId: issue.id,
        urlEnc: cipher.encrypt(downloadPath(id)),
        titleEnc: cipher.encrypt(input.filename),
        authorId: ctx.principal.userId,
        keyId: ctx.principal.keyId,
        createdAt: now,
      })
      .returning();
    const file = { contentType, sizeBytes: bytes.length };
    await tx.insert(attachmentFiles).values({ attachmentId: id, orgId: ctx.principal.orgId, ...file, contentEnc: cipher.encryptBytes(bytes) });
    await recordActivity(scope, { issueId: issue.id, kind: "attachment_added", detail: { attachmentId: id, size: bytes.length, contentType } });
    // Work per started MiB: a 10 MiB trace costs ten times a screenshot's storage and transfer.
    meter(scope, "save_attachment_file", "work", issue.id, Math.max(1, Math.ceil(bytes.length / (1024 * 1024))));
    return attachmentView(cipher, row!, issue.identifier, file);
  });
}

/** A file attachment's content and what it is, in the caller's org only. */
export async function readAttachmentFile(ctx: Ctx, attachmentId: string) {
  const [found, cipher] = await Promise.all([
    findAttachment(ctx.db, ctx.principal, attachmentId),
    ctx.keyring.forOrg(ctx.db, ctx.principal.orgId),
  ]);
  const [file] = await ctx.db
    .select()
    .from(attachmentFiles)
    .where(and(eq(attachmentFiles.attachmentId, found.attachment.id), eq(attachmentFiles.orgId, ctx.principal.orgId)));
  if (!file) throw notFound(`file attachment ${attachmentId}`, "That attachment is a link: get_attachment returns its URL.");
  return {
    view: attachmentView(cipher, found.attachment, found.identifier, file),
    filename: cipher.decrypt(found.attachment.titleEnc) ?? "attachment",
    content: cipher.decryptBytes(file.contentEnc),
  };
}

export async function getAttachmentFile(ctx: Ctx, raw: z.input<typeof getAttachmentFileInput>) {
  const input = getAttachmentFileInput.parse(raw);
  const { view, filename, content } = await readAttachmentFile(ctx, input.attachment);
  // The title is the filename, and the url a Dash download an agent cannot follow: neither goes out twice.
  const { title: _title, url: _url, kind: _kind, ...file } = view;
  return { ...file, filename, contentBase64: content.toString("base64") };
}

/** The Dash's download of a file attachment: its bytes and the headers that keep them from ever running as a page. */
export async function downloadAttachmentFile(ctx: Ctx, raw: z.input<typeof getAttachmentFileInput>) {
  const input = getAttachmentFileInput.parse(raw);
  const { view, filename, content } = await readAttachmentFile(ctx, input.attachment);
  return { headers: downloadHeaders(filename, view.contentType!, content.length), content };
}
