import { and, desc, eq, isNull, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { attachmentFiles, attachments, comments, user } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";

/**
 * What a claim carries of an issue's discussion, so an agent reworking after a review reads
 * the review without a second call: the latest comments, each cut to a size, and the live
 * attachments, newest last. `omitted` says what was left out and which tool reads it all.
 * At most about 5 × 400 characters of comment text, whatever the thread's length.
 */
export const CLAIM_COMMENTS = 5;
export const CLAIM_COMMENT_CHARS = 400;
export const CLAIM_ATTACHMENTS = 5;

const total = sql<number>`count(*) over ()`.mapWith(Number);

export async function claimDiscussion(db: Db, cipher: OrgCipher, issueId: string, identifier: string) {
  const [commentRows, attachmentRows] = await Promise.all([
    db
      .select({ id: comments.id, bodyEnc: comments.bodyEnc, createdAt: comments.createdAt, runtime: comments.runtime, name: user.name, total })
      .from(comments)
      .leftJoin(user, eq(user.id, comments.authorId))
      .where(and(eq(comments.issueId, issueId), isNull(comments.retractedAt)))
      .orderBy(desc(comments.createdAt), desc(comments.id))
      .limit(CLAIM_COMMENTS),
    db
      .select({
        id: attachments.id,
        urlEnc: attachments.urlEnc,
        titleEnc: attachments.titleEnc,
        contentType: attachmentFiles.contentType,
        size: attachmentFiles.sizeBytes,
        total,
      })
      .from(attachments)
      .leftJoin(attachmentFiles, eq(attachmentFiles.attachmentId, attachments.id))
      .where(and(eq(attachments.issueId, issueId), isNull(attachments.obsoletedAt)))
      .orderBy(desc(attachments.createdAt), desc(attachments.id))
      .limit(CLAIM_ATTACHMENTS),
  ]);
  let cut = 0;
  const latestComments = commentRows.reverse().map((c) => {
    const body = cipher.decrypt(c.bodyEnc);
    const long = body.length > CLAIM_COMMENT_CHARS;
    if (long) cut++;
    return {
      id: c.id,
      author: c.name ?? c.runtime,
      body: long ? `${body.slice(0, CLAIM_COMMENT_CHARS)}…` : body,
      createdAt: c.createdAt.toISOString(),
    };
  });
  const liveAttachments = attachmentRows.reverse().map((a) =>
    a.contentType === null
      ? { id: a.id, kind: "link" as const, url: cipher.decrypt(a.urlEnc), title: cipher.decrypt(a.titleEnc) }
      : { id: a.id, kind: "file" as const, title: cipher.decrypt(a.titleEnc), contentType: a.contentType, size: a.size! },
  );
  const earlierComments = (commentRows[0]?.total ?? 0) - commentRows.length;
  const earlierAttachments = (attachmentRows[0]?.total ?? 0) - attachmentRows.length;
  const left: string[] = [];
  if (earlierComments > 0) left.push(`${earlierComments} earlier comment${earlierComments > 1 ? "s" : ""}`);
  if (cut > 0) left.push(`the rest of ${cut} cut at ${CLAIM_COMMENT_CHARS} characters (…)`);
  const arg = JSON.stringify({ issue: identifier });
  const reads = [...(left.length > 0 ? [`list_comments ${arg}`] : []), ...(earlierAttachments > 0 ? [`list_attachments ${arg}`] : [])];
  if (earlierAttachments > 0) left.push(`${earlierAttachments} earlier attachment${earlierAttachments > 1 ? "s" : ""}`);
  return {
    comments: latestComments,
    attachments: liveAttachments,
    ...(left.length > 0 ? { omitted: `${left.join("; ")}: ${reads.join(", ")}` } : {}),
  };
}
export type ClaimDiscussion = Awaited<ReturnType<typeof claimDiscussion>>;
