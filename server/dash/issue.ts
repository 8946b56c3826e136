import { and, asc, desc, eq, inArray, lt } from "drizzle-orm";
import { z } from "zod";
import { activity, agentKeys, checkpoints, user } from "../../db/schema/index.ts";
import { activityDetail } from "../activity/index.ts";
import { activityWords, mentionedIssues } from "./activity-text.ts";
import type { Ctx } from "../context.ts";
import { listAttachments } from "../issues/attachments.ts";
import { isInlineImage } from "../issues/attachments-sniff.ts";
import { listComments } from "../issues/comments.ts";
import { getIssueInput } from "../issues/schemas.ts";
import { findIssue, identifiersInReach } from "../issues/lookups.ts";
import { issueView } from "../issues/views.ts";
import { markdown } from "../markdown/index.ts";
import { decodeCursor, encodeCursor } from "../paging.ts";
import { listProjects } from "../orgs/projects.ts";
import { neighbourhood } from "./graph.ts";
import { activeMembers } from "./people.ts";
import { resumedIssueIds, workPills } from "./queue.ts";
import { rankReasons } from "./why.ts";
import { leaseSessionOf } from "./lease-session.ts";

/**
 * Everything the drill-down shows about one issue of the viewer's org: the issue as agents
 * read it (get_issue), its body rendered and sanitized, why it ranks where it does, its
 * neighbourhood in the graph, the checkpoint timeline, the comment thread, the attachments
 * (links, and files with their download and, for images, a thumbnail) and the activity log (decrypted) with the principal, runtime and key of each entry.
 * The thread and the log are read a page at a time, so a page costs the same however busy the issue.
 */
export const ACTIVITY_PAGE = 200;
export const COMMENT_PAGE_BYTES = 64 * 1024;
const activityCursor = z.object({ before: z.number().int().min(1) });

/** `comments`, `activity`: the cursors of the comment page and the activity page to show (newest activity first). */
export async function issueDetail(ctx: Ctx, raw: z.input<typeof getIssueInput>, page: { comments?: string; activity?: string } = {}) {
  const { identifier } = getIssueInput.parse(raw);
  const { db } = ctx;
  const orgId = ctx.principal.orgId;
  const now = ctx.clock.now();
  const activityBefore = decodeCursor(page.activity, activityCursor)?.before ?? null;
  const row = await findIssue(db, ctx.principal, identifier);
  const cipher = await ctx.keyring.forOrg(db, orgId);

  const [view, thread, attached, checkpointRows, activityRows, graph, reasons, people, resumed] = await Promise.all([
    issueView(db, ctx.principal, cipher, row, now),
    // A page renders each comment twice (its HTML, and the data the page hydrates from): a quarter of an agent's budget.
    listComments(ctx, { issue: row.identifier, cursor: page.comments }, COMMENT_PAGE_BYTES),
    listAttachments(ctx, { issue: row.identifier }),
    db
      .select({ checkpoint: checkpoints, email: user.email, keyPrefix: agentKeys.prefix })
      .from(checkpoints)
      .leftJoin(user, eq(user.id, checkpoints.userId))
      .leftJoin(agentKeys, eq(agentKeys.id, checkpoints.keyId))
      .where(and(eq(checkpoints.issueId, row.id), eq(checkpoints.orgId, orgId)))
      .orderBy(asc(checkpoints.createdAt), asc(checkpoints.id)),
    db
      .select({
        id: activity.id,
        kind: activity.kind,
        runtime: activity.runtime,
        actorId: activity.actorId,
        email: user.email,
        name: user.name,
        keyPrefix: agentKeys.prefix,
        detailEnc: activity.detailEnc,
        facts: activity.facts,
        createdAt: activity.createdAt,
      })
      .from(activity)
      .leftJoin(user, eq(user.id, activity.actorId))
      .leftJoin(agentKeys, eq(agentKeys.id, activity.keyId))
      .where(and(eq(activity.issueId, row.id), eq(activity.orgId, orgId), activityBefore === null ? undefined : lt(activity.id, activityBefore)))
      .orderBy(desc(activity.id))
      .limit(ACTIVITY_PAGE + 1),
    neighbourhood(db, cipher, ctx.principal, row),
    rankReasons(db, ctx.principal, [row]),
    activeMembers(ctx),
    resumedIssueIds(db, orgId, [row], now),
  ]);

  const leaseSession = await leaseSessionOf(db, row, now);
  const authorIds = [...new Set(thread.comments.map((c) => c.authorId).filter((id): id is string => Boolean(id)))];
  const authors =
    authorIds.length === 0
      ? new Map<string, string>()
      : new Map(
          (await db.select({ id: user.id, email: user.email }).from(user).where(inArray(user.id, authorIds))).map((u) => [u.id, u.email]),
        );

  // Off the event loop, each render bounded in time (server/markdown); a retracted comment shows its text struck out.
  const [bodyHtml, ...commentsHtml] = await Promise.all(
    [view.body, ...thread.comments.map((c) => (c.retracted ? null : c.body))].map((source) => markdown.render(source)),
  );

  const entries = activityRows.slice(0, ACTIVITY_PAGE).map((a) => ({ ...a, detail: activityDetail(cipher, a) }));
  const names = {
    attachments: new Map(attached.attachments.map((a) => [a.id, a.title ?? a.url ?? "an attachment"])),
    issues: await identifiersInReach(db, ctx.principal, entries.flatMap(mentionedIssues)),
  };
  return {
    now: now.toISOString(),
    issue: view,
    leaseSession,
    pills: workPills(row, now, resumed),
    bodyHtml: bodyHtml!,
    why: reasons.get(row.id)!,
    graph,
    checkpoints: checkpointRows.map(({ checkpoint: c, email, keyPrefix }) => ({
      id: c.id,
      at: c.createdAt.toISOString(),
      runtime: c.runtime,
      who: email,
      keyPrefix,
      done: cipher.decrypt(c.doneEnc),
      next: cipher.decrypt(c.nextEnc),
      gotchas: cipher.decrypt(c.gotchasEnc),
      note: cipher.decrypt(c.noteEnc),
      branch: c.branch,
    })),
    attachments: attached.attachments.map((a) => ({ ...a, thumbnail: a.contentType !== null && isInlineImage(a.contentType) })),
    comments: thread.comments.map((c, i) => ({ ...c, bodyHtml: commentsHtml[i]!, author: c.authorId ? (authors.get(c.authorId) ?? null) : null })),
    /** Where the next page of comments starts, and whether this is a later page than the first. */
    commentPages: { next: thread.nextCursor ?? null, later: page.comments !== undefined },
    activity: entries.map((a) => ({
      id: a.id,
      kind: a.kind,
      at: a.createdAt.toISOString(),
      runtime: a.runtime,
      who: a.email ?? (a.actorId ? a.actorId : "system"),
      keyPrefix: a.keyPrefix,
      ...activityWords(a, names),
    })),
    /** Where the next (older) page of activity starts, and whether this is a later page than the first. */
    activityPages: {
      next: activityRows.length > ACTIVITY_PAGE ? encodeCursor({ before: activityRows[ACTIVITY_PAGE - 1]!.id }) : null,
      later: activityBefore !== null,
    },
    members: people,
  };
}
export type IssueDetail = Awaited<ReturnType<typeof issueDetail>>;

/** What the new-issue form offers: the org's projects and the people work can be assigned to. */
export async function newIssueOptions(ctx: Ctx) {
  const [{ projects }, people] = await Promise.all([listProjects(ctx, {}), activeMembers(ctx)]);
  return { projects, members: people };
}

