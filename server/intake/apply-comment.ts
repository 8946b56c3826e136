import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { intakeComments } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { retractComment, saveComment } from "../issues/comments.ts";
import { WRITE_BACK_MARKER, type SourceComment } from "./events.ts";
import { providerName, type ConnectorFacts } from "./facts.ts";
import { dropHeld, holdText, isHeld } from "./held.ts";

/**
 * A source comment created or deleted, on the linked issue or review item (the caller holds the
 * source's lock): created, an outsider's is held for a person and the team's becomes a comment
 * attributed to its author's handle, once per source comment id; deleted, the comment it made is
 * retracted, or what was held is withdrawn.
 */
export async function applyComment(
  ctx: Ctx,
  tx: Db,
  cipher: OrgCipher,
  connector: ConnectorFacts,
  item: { identifier: string; issueId: string },
  event: { action: "created" | "deleted"; comment: SourceComment },
  commenterOutside: boolean,
): Promise<string> {
  if (event.action === "created") return takeComment(ctx, tx, cipher, connector, item, event.comment, commenterOutside);
  const [mapped] = await tx
    .select({ commentId: intakeComments.commentId })
    .from(intakeComments)
    .where(and(eq(intakeComments.connectorId, connector.id), eq(intakeComments.sourceId, event.comment.id)));
  if (!mapped && (await dropHeld(tx, connector.id, "comment", event.comment.id))) {
    // Withdrawn while held: remembered, so the same comment id is never taken in later.
    await tx.insert(intakeComments).values({ orgId: connector.orgId, connectorId: connector.id, sourceId: event.comment.id, commentId: null }).onConflictDoNothing();
    await recordActivity({ tx, ctx, cipher, now: ctx.clock.now() }, { issueId: item.issueId, kind: "held_comment_withdrawn", detail: { source: `deleted on ${providerName[connector.provider]}` } });
    return "withdrawn";
  }
  if (!mapped?.commentId) return "skipped";
  await retractComment(ctx, { comment: mapped.commentId, note: `deleted on ${providerName[connector.provider]}` });
  return "retracted";
}

/** The text a source comment becomes in the thread: attributed to its author's handle. */
export const commentTextOf = (connector: Pick<ConnectorFacts, "provider">, comment: SourceComment) =>
  `@${comment.author} on ${providerName[connector.provider]}:\n\n${comment.body}`.slice(0, 50_000);

/** A created source comment, once per id: held when its author is outside, else added. Our own write-back comments (their marker) and empty ones are skipped. */
export async function takeComment(
  ctx: Ctx,
  tx: Db,
  cipher: OrgCipher,
  connector: ConnectorFacts,
  item: { identifier: string; issueId: string },
  comment: SourceComment,
  commenterOutside: boolean,
): Promise<string> {
  if (comment.body.includes(WRITE_BACK_MARKER) || !comment.body.trim()) return "skipped";
  const [seen] = await tx
    .select({ commentId: intakeComments.commentId })
    .from(intakeComments)
    .where(and(eq(intakeComments.connectorId, connector.id), eq(intakeComments.sourceId, comment.id)));
  if (seen || (await isHeld(tx, connector.id, "comment", comment.id))) return "skipped";
  if (commenterOutside) {
    const now = ctx.clock.now();
    await holdText(tx, cipher, { orgId: connector.orgId, connectorId: connector.id, issueId: item.issueId, sourceId: comment.id, reason: "filed", now }, { kind: "comment", author: comment.author, body: commentTextOf(connector, comment) });
    await recordActivity({ tx, ctx, cipher, now }, { issueId: item.issueId, kind: "comment_held", detail: { source: `@${comment.author} on ${providerName[connector.provider]}` } });
    await ctx.events.publish(tx, { orgId: connector.orgId, kind: "comment.held", issueId: item.issueId, identifier: item.identifier });
    return "held";
  }
  const saved = await saveComment(ctx, { issue: item.identifier, body: commentTextOf(connector, comment) });
  await tx.insert(intakeComments).values({ orgId: connector.orgId, connectorId: connector.id, sourceId: comment.id, commentId: saved.id });
  return "commented";
}
