import type { z } from "zod";
import { and, asc, eq } from "drizzle-orm";
import { comments } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, notFound } from "../errors.ts";
import { newId } from "../orgs/index.ts";
import { listCommentsInput, retractCommentInput, saveCommentInput } from "./schemas.ts";
import { findIssue, inTransaction } from "./store.ts";
import { meter } from "../usage/meter.ts";

/** Threaded comments, encrypted at rest. Retracted, never deleted. Comments never renew a lease. */
export async function saveComment(ctx: Ctx, raw: z.input<typeof saveCommentInput>) {
  const input = saveCommentInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const { tx, now, cipher } = scope;
    const issue = await findIssue(tx, ctx.principal.orgId, input.issue);
    if (input.parent) {
      const parent = await tx
        .select({ id: comments.id })
        .from(comments)
        .where(and(eq(comments.id, input.parent), eq(comments.issueId, issue.id)));
      if (!parent[0]) throw notFound(`comment ${input.parent} on ${input.issue}`);
    }
    const id = newId();
    await tx.insert(comments).values({
      id,
      orgId: ctx.principal.orgId,
      issueId: issue.id,
      parentId: input.parent ?? null,
      authorId: ctx.principal.userId,
      keyId: ctx.principal.keyId,
      runtime: ctx.principal.runtime,
      bodyEnc: cipher.encrypt(input.body),
      createdAt: now,
    });
    await recordActivity(scope, { issueId: issue.id, kind: "commented", detail: { commentId: id } });
    meter(scope, "save_comment", "work", issue.id);
    await ctx.events.publish(tx, { orgId: ctx.principal.orgId, kind: "comment.added", issueId: issue.id, identifier: issue.identifier });
    return { id, issue: issue.identifier, parent: input.parent ?? null, body: input.body, createdAt: now.toISOString() };
  });
}

export async function listComments(ctx: Ctx, raw: z.input<typeof listCommentsInput>) {
  const input = listCommentsInput.parse(raw);
  const issue = await findIssue(ctx.db, ctx.principal.orgId, input.issue);
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const rows = await ctx.db
    .select()
    .from(comments)
    .where(eq(comments.issueId, issue.id))
    .orderBy(asc(comments.createdAt), asc(comments.id));
  return {
    issue: issue.identifier,
    comments: rows.map((c) => ({
      id: c.id,
      parent: c.parentId,
      authorId: c.authorId,
      runtime: c.runtime,
      body: cipher.decrypt(c.bodyEnc),
      retracted: c.retractedAt !== null,
      retractedAt: c.retractedAt?.toISOString() ?? null,
      retractNote: cipher.decrypt(c.retractNoteEnc),
      createdAt: c.createdAt.toISOString(),
    })),
  };
}

/** Strikes a comment through with a reason; the record stays. Only its author (or an admin, later) may. */
export async function retractComment(ctx: Ctx, raw: z.input<typeof retractCommentInput>) {
  const input = retractCommentInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const { tx, now, cipher } = scope;
    const [comment] = await tx
      .select()
      .from(comments)
      .where(and(eq(comments.id, input.comment), eq(comments.orgId, ctx.principal.orgId)))
      .for("update");
    if (!comment) throw notFound(`comment ${input.comment}`);
    if (comment.authorId !== ctx.principal.userId) {
      throw new DomainError("FORBIDDEN", "only the comment's author can retract it", "Reply to it instead.");
    }
    if (!comment.retractedAt) {
      await tx
        .update(comments)
        .set({ retractedAt: now, retractNoteEnc: cipher.encrypt(input.note) })
        .where(eq(comments.id, comment.id));
      await recordActivity(scope, { issueId: comment.issueId, kind: "comment_retracted", detail: { commentId: comment.id, note: input.note } });
      meter(scope, "retract_comment", "bookkeeping", comment.issueId);
    }
    return { id: comment.id, retracted: true };
  });
}
