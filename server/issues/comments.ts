import { z } from "zod";
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { comments } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, notFound } from "../errors.ts";
import { newId } from "../orgs/index.ts";
import { inScope } from "../orgs/scope.ts";
import { listCommentsInput, retractCommentInput, saveCommentInput } from "./schemas.ts";
import { findIssue } from "./lookups.ts";
import { inTransaction } from "./store.ts";
import { meter } from "../usage/meter.ts";
import { decodeCursor, encodeCursor, fitting, REPLY_BUDGET_BYTES } from "../paging.ts";

/** Threaded comments, encrypted at rest. Retracted, never deleted. Comments never renew a lease. */
export async function saveComment(ctx: Ctx, raw: z.input<typeof saveCommentInput>) {
  const input = saveCommentInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const { tx, now, cipher } = scope;
    const issue = await findIssue(tx, ctx.principal, input.issue);
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

const commentCursor = z.object({ t: z.string().regex(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?[+-]\d\d(:\d\d)?$/), id: z.string().uuid() });

/**
 * An issue's discussion, oldest first, a page at a time: `limit` comments (50 unless asked) and
 * no more than `budget` bytes of them (the reply budget, server/paging.ts, unless a door asks for
 * less), decided on the stored sizes before any body is read or decrypted, so a thread of any
 * length costs one page of memory. `nextCursor` while more follow.
 */
export async function listComments(ctx: Ctx, raw: z.input<typeof listCommentsInput>, budget = REPLY_BUDGET_BYTES) {
  const input = listCommentsInput.parse(raw);
  const after = decodeCursor(input.cursor, commentCursor);
  const limit = input.limit ?? 50;
  const issue = await findIssue(ctx.db, ctx.principal, input.issue);
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const sizes = await ctx.db
    // The time as PostgreSQL writes it (microseconds), so the cursor compares exactly.
    .select({ id: comments.id, at: sql<string>`${comments.createdAt}::text`, bytes: sql<number>`(octet_length(${comments.bodyEnc}) + coalesce(octet_length(${comments.retractNoteEnc}), 0)) * 3 / 4` })
    .from(comments)
    .where(and(eq(comments.issueId, issue.id), after ? sql`(${comments.createdAt}, ${comments.id}) > (${after.t}::timestamptz, ${after.id})` : undefined))
    .orderBy(asc(comments.createdAt), asc(comments.id))
    .limit(limit + 1);
  // Ciphertext is base64 (3 bytes of text per 4 stored); 300: what a comment's JSON adds besides its text.
  const page = sizes.slice(0, fitting(sizes.slice(0, limit).map((s) => Number(s.bytes) + 300), budget));
  const last = page.at(-1);
  const rows = page.length
    ? await ctx.db
        .select()
        .from(comments)
        .where(inArray(comments.id, page.map((p) => p.id)))
        .orderBy(asc(comments.createdAt), asc(comments.id))
    : [];
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
    ...(last && sizes.length > page.length ? { nextCursor: encodeCursor({ t: last.at, id: last.id }) } : {}),
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
      .where(and(eq(comments.id, input.comment), eq(comments.orgId, ctx.principal.orgId), inScope(ctx.principal, sql`(select i.project_id from issues i where i.id = ${comments.issueId})`)))
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
