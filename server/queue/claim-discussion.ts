import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import type { OrgCipher } from "../crypto/index.ts";

/**
 * What a claim carries of an issue's discussion, so an agent reworking after a review reads
 * the review without a second call: the latest comments, each cut to a size, and the live
 * attachments, newest last. `omitted` says what was left out and which tool reads it all.
 * At most about 5 × 400 characters of comment text, whatever the thread's length. How many of
 * each come is retasc_claim_discussion's (db/migrations/0024), which retasc_take_lease calls, so
 * a claim reads them in its own statement.
 */
export const CLAIM_COMMENT_CHARS = 400;

/** What retasc_claim_discussion returns: the latest five of each, newest first, and how many there are. */
export interface ClaimDiscussionJson {
  comments: { id: string; bodyEnc: string; createdAt: string; runtime: string | null; name: string | null }[];
  commentsTotal: number;
  attachments: { id: string; urlEnc: string; titleEnc: string | null; contentType: string | null; size: number | null }[];
  attachmentsTotal: number;
}

/** The discussion of an issue whose claim did not read it (a rebound lease). */
export async function readClaimDiscussion(db: Db, issueId: string, orgId: string): Promise<ClaimDiscussionJson> {
  const [row] = await query<{ discussion: ClaimDiscussionJson }>(db, sql`select retasc_claim_discussion(${issueId}, ${orgId}::text) as discussion`);
  return row!.discussion;
}

export function claimDiscussion(cipher: OrgCipher, read: ClaimDiscussionJson, identifier: string) {
  let cut = 0;
  const latestComments = [...read.comments].reverse().map((c) => {
    const body = cipher.decrypt(c.bodyEnc);
    const long = body.length > CLAIM_COMMENT_CHARS;
    if (long) cut++;
    return {
      id: c.id,
      author: c.name ?? c.runtime,
      body: long ? `${body.slice(0, CLAIM_COMMENT_CHARS)}…` : body,
      createdAt: c.createdAt,
    };
  });
  const liveAttachments = [...read.attachments].reverse().map((a) =>
    a.contentType === null
      ? { id: a.id, kind: "link" as const, url: cipher.decrypt(a.urlEnc), title: cipher.decrypt(a.titleEnc) }
      : { id: a.id, kind: "file" as const, title: cipher.decrypt(a.titleEnc), contentType: a.contentType, size: a.size! },
  );
  const earlierComments = read.commentsTotal - read.comments.length;
  const earlierAttachments = read.attachmentsTotal - read.attachments.length;
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
export type ClaimDiscussion = ReturnType<typeof claimDiscussion>;
