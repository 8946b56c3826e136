import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { intakeComments, intakeLinks, issues, type ConnectorProvider } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import { systemPrincipal, type Ctx, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { DomainError } from "../errors.ts";
import { saveIssue } from "../issues/index.ts";
import { saveAttachment } from "../issues/attachments.ts";
import { retractComment, saveComment } from "../issues/comments.ts";
import { BODY_MAX_CHARS } from "../issues/schemas.ts";
import { lockOrgGraph } from "../issues/ranking.ts";
import { isTerminal } from "../issues/store.ts";
import { moveTriage } from "../issues/triage-moves.ts";
import { WRITE_BACK_MARKER, type IntakeEvent, type SourceComment, type SourceIssue } from "./events.ts";
import { dropHeld, HELD_BODY, heldTitle, holdText, isHeld, textDigest } from "./held.ts";

export interface ConnectorFacts {
  id: string;
  orgId: string;
  provider: ConnectorProvider;
  repo: string;
  projectPrefix: string;
  intakeLabel: string;
  triageAll: boolean;
  /** The pull/merge request stream's reviewer, when the stream is on. */
  reviewerId: string | null;
}

export const providerName: Record<ConnectorProvider, string> = { github: "GitHub", gitlab: "GitLab" };

/** Source labels as Retasc labels: trimmed, at most 64 characters, the connector's own first. */
export function labelsOf(connector: ConnectorFacts, issue: SourceIssue): string[] {
  const names = [connector.intakeLabel, ...issue.labels].map((l) => l.trim().slice(0, 64)).filter((l) => l.length > 0);
  return [...new Set(names)].slice(0, 50);
}

export const titleOf = (issue: SourceIssue) => issue.title.trim().slice(0, 500) || `(untitled #${issue.number})`;
export const bodyOf = (issue: SourceIssue) => issue.body.slice(0, BODY_MAX_CHARS);
/** An ISO instant (GitHub's milestone) or a YYYY-MM-DD date (GitLab), as save_issue reads them; anything else is no date. */
export const dueOf = (issue: SourceIssue) => (issue.dueAt && /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2}))?$/.test(issue.dueAt) ? issue.dueAt : null);

/** The author's standing as the provider told it: the source issue's, and a created comment's. */
export interface Standing {
  /** The source issue's (or request's) author is outside the team and the connector triages: its text waits for a person. */
  outsider: boolean;
  /** A created comment's author is outside the team: the comment waits for a person. */
  commenterOutside: boolean;
}

/**
 * Applies one intake event to the connector's project, inside the caller's transaction `tx`,
 * as the system. Effect once: the source issue and comment ids are keys (intake_links,
 * intake_comments, intake_held) taken under a per-source-issue lock, so a repeated or
 * concurrent event finds what the first one made. Outsiders' text is held, never written where
 * an agent reads it (decision 038): their issues are filed awaiting triage with their text held,
 * their edits put an accepted issue back in triage, their comments wait for a person.
 */
export async function applyIntakeEvent(services: Services, tx: Db, connector: ConnectorFacts, event: Extract<IntakeEvent, { kind: "issue" | "comment" }>, standing: Standing): Promise<string> {
  const { ctx, link, cipher } = await lockedLink(services, tx, connector, event.issue);
  const source = event.issue;
  if (!link) {
    // Events about an issue filed before the connector existed create it too, while it is open
    // there. A comment files it awaiting triage, whoever wrote the issue: a comment is no
    // person's decision to hand the issue to agents.
    if (!source.open || event.action === "deleted") return "skipped";
    const filed = await fileIssue(ctx, tx, connector, source, { held: event.kind === "comment" || standing.outsider });
    if (event.kind === "comment" && event.action === "created") await takeComment(ctx, tx, cipher, connector, filed, event.comment, standing.commenterOutside);
    return "created";
  }
  if (event.kind === "comment") return applyComment(ctx, tx, cipher, connector, link, event, standing.commenterOutside);
  if (isStale(link, source, event.action)) return "stale";
  await noteSourceUpdate(tx, connector, source);
  const identifier = link.identifier;
  const setSourceOpen = (open: boolean) => setLinkOpen(tx, connector, source, open);
  const where = providerName[connector.provider];
  switch (event.action) {
    case "closed":
    case "deleted": {
      // The link is marked first: the write-back trigger then has no open source to close.
      await setSourceOpen(false);
      if (isTerminal(link.status)) return "unchanged";
      const reason = `${event.action} on ${where} (${connector.repo}#${source.number})`;
      try {
        await saveIssue(ctx, { identifier, status: "canceled", cancelReason: reason });
        return "canceled";
      } catch (error) {
        // Held by an agent: its holder finishes or releases it; the thread says what happened.
        if (!(error instanceof DomainError) || error.code !== "ALREADY_CLAIMED") throw error;
        await saveComment(ctx, { issue: identifier, body: `The source issue was ${reason}.` });
        return "noted";
      }
    }
    case "reopened":
      await setSourceOpen(true);
      if (isTerminal(link.status)) {
        // Terminal issues stay closed (save_issue's rule): the thread says the source came back.
        await saveComment(ctx, { issue: identifier, body: `Reopened on ${where} (${connector.repo}#${source.number}); this issue stays ${link.status}.` });
        return "noted";
      }
      return syncSource(ctx, tx, cipher, connector, link, source, standing.outsider);
    default:
      if (isTerminal(link.status)) return "unchanged";
      return syncSource(ctx, tx, cipher, connector, link, source, standing.outsider);
  }
}

/** The link of a source, with what intake decides by: the item's status, triage and text, and what a person signed. */
export interface LockedLink {
  issueId: string;
  identifier: string;
  status: string;
  sourceOpen: boolean;
  triage: "pending" | "accepted" | null;
  titleEnc: string;
  bodyEnc: string | null;
  signedDigestEnc: string | null;
  sourceUpdatedAt: Date | null;
}

/**
 * The system's context inside `tx`, with the source's lock taken and its link (if any) read:
 * every event about one source issue or request is applied one at a time.
 */
export async function lockedLink(services: Services, tx: Db, connector: ConnectorFacts, source: { id: string }): Promise<{ ctx: Ctx; link: LockedLink | undefined; cipher: OrgCipher }> {
  const ctx: Ctx = { ...withPrincipal({ ...services, db: tx }, systemPrincipal(connector.orgId)) };
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`intake:${connector.id}:${source.id}`}))`);
  const [link] = await tx
    .select({
      issueId: intakeLinks.issueId,
      identifier: issues.identifier,
      status: issues.status,
      sourceOpen: intakeLinks.sourceOpen,
      triage: issues.triage,
      titleEnc: issues.titleEnc,
      bodyEnc: issues.bodyEnc,
      signedDigestEnc: intakeLinks.signedDigestEnc,
      sourceUpdatedAt: intakeLinks.sourceUpdatedAt,
    })
    .from(intakeLinks)
    .innerJoin(issues, eq(issues.id, intakeLinks.issueId))
    .where(and(eq(intakeLinks.connectorId, connector.id), eq(intakeLinks.sourceId, source.id)));
  return { ctx, link, cipher: await services.keyring.forOrg(tx, connector.orgId) };
}

export const setLinkOpen = (tx: Db, connector: ConnectorFacts, source: { id: string }, open: boolean) =>
  tx.update(intakeLinks).set({ sourceOpen: open }).where(and(eq(intakeLinks.connectorId, connector.id), eq(intakeLinks.sourceId, source.id)));

/**
 * An edit older than the last event applied to the source (a late retry, or a replay that
 * carries an old text): applying it would bring old text back, so it changes nothing. Opens,
 * closes and reopens are applied whatever their age (they move the item, not its text; a copy
 * of one already received is a duplicate at the door).
 */
export function isStale(link: Pick<LockedLink, "sourceUpdatedAt">, source: SourceIssue, action: string): boolean {
  if (action !== "changed") return false;
  if (!source.updatedAt || !link.sourceUpdatedAt) return false;
  return Date.parse(source.updatedAt) < link.sourceUpdatedAt.getTime();
}

/** Remembers the newest source updated_at applied. */
export async function noteSourceUpdate(tx: Db, connector: ConnectorFacts, source: SourceIssue): Promise<void> {
  if (!source.updatedAt) return;
  await tx
    .update(intakeLinks)
    .set({ sourceUpdatedAt: sql`greatest(${intakeLinks.sourceUpdatedAt}, ${source.updatedAt}::timestamptz)` })
    .where(and(eq(intakeLinks.connectorId, connector.id), eq(intakeLinks.sourceId, source.id)));
}

/** The team's own source: its fields are taken as they are. */
export async function syncFields(ctx: Ctx, connector: ConnectorFacts, identifier: string, source: SourceIssue) {
  await saveIssue(ctx, { identifier, title: titleOf(source), body: bodyOf(source), labels: labelsOf(connector, source), dueAt: dueOf(source) });
}

/**
 * Keeps a linked item in step with its source. The team's own text is taken as it is. An
 * outsider's (`held`) never reaches the item unsigned: labels and due date are kept in step, and
 * a title and body other than what a person accepted are held, the item going back to triage
 * (its activity says so) while the agents keep reading the text that person signed. The source
 * back at the signed text drops what was held and the item is accepted again.
 */
export async function syncSource(ctx: Ctx, tx: Db, cipher: OrgCipher, connector: ConnectorFacts, link: LockedLink, source: SourceIssue, held: boolean): Promise<string> {
  if (!held) {
    await syncFields(ctx, connector, link.identifier, source);
    await dropHeld(tx, connector.id, "issue", source.id);
    return "updated";
  }
  // A review's triage move re-ranks it (moveTriage): the graph lock goes before the row's, which saveIssue takes.
  if (link.status === "review") await lockOrgGraph(tx, connector.orgId);
  await saveIssue(ctx, { identifier: link.identifier, labels: labelsOf(connector, source), dueAt: dueOf(source) });
  const text = { kind: "issue" as const, author: source.author, title: titleOf(source), body: bodyOf(source) };
  const digest = textDigest(text);
  // What a person let in: their signature; for an item let in before signatures were kept
  // (or the team's own, now from an outsider), the text it holds. Nothing while it awaits triage.
  const signed = link.signedDigestEnc
    ? cipher.decrypt(link.signedDigestEnc)
    : link.triage === "pending"
      ? null
      : textDigest({ kind: "issue", author: "", title: cipher.decrypt(link.titleEnc), body: cipher.decrypt(link.bodyEnc) ?? "" });
  const now = ctx.clock.now();
  const scope = { tx, ctx, cipher, now };
  const what = `${providerName[connector.provider]} ${connector.repo}#${source.number}`;
  if (digest === signed) {
    const dropped = await dropHeld(tx, connector.id, "issue", source.id);
    if (link.triage === "pending" && link.signedDigestEnc) {
      await moveTriage(tx, connector.orgId, link.issueId, "accepted", now);
      await recordActivity(scope, { issueId: link.issueId, kind: "triage_restored", detail: { source: what } });
      await ctx.events.publish(tx, { orgId: connector.orgId, kind: "issue.updated", issueId: link.issueId, identifier: link.identifier, status: link.status });
      return "restored";
    }
    return dropped ? "restored" : "updated";
  }
  const already = link.triage === "pending" ? await isHeld(tx, connector.id, "issue", source.id) : null;
  const reason = link.triage === "pending" ? (already?.reason ?? "filed") : "edited";
  await holdText(tx, cipher, { orgId: connector.orgId, connectorId: connector.id, issueId: link.issueId, sourceId: source.id, reason, now }, text);
  if (link.triage !== "pending") {
    await moveTriage(tx, connector.orgId, link.issueId, "pending", now);
  }
  await recordActivity(scope, { issueId: link.issueId, kind: "triage_held", facts: { reason: link.triage === "pending" ? "replaced" : "edited" }, detail: { source: what } });
  await ctx.events.publish(tx, { orgId: connector.orgId, kind: "issue.updated", issueId: link.issueId, identifier: link.identifier, status: link.status });
  return link.triage === "pending" ? "held" : "requeued";
}

/**
 * Files the source as a Retasc issue and links it. `held`: an outsider's (or one a comment
 * brought in), filed awaiting triage under a title naming only where it came from, its text
 * held for a person. A pull/merge request (`review`) is assigned to the reviewer and put in
 * review, so it sits on the reviewer's lane; without a reviewer (the preset one left the org) it
 * stays unassigned in todo. A reopened request whose item ended is filed again and its link
 * moved to the new item.
 */
export async function fileIssue(
  ctx: Ctx,
  tx: Db,
  connector: ConnectorFacts,
  source: SourceIssue,
  options: { held: boolean; review?: { reviewerId: string | null } },
): Promise<{ identifier: string; issueId: string }> {
  const { held, review } = options;
  const where = providerName[connector.provider];
  const what = review ? `${connector.provider === "github" ? "pull" : "merge"} request ${connector.repo}${connector.provider === "github" ? "#" : "!"}${source.number}` : `${connector.repo}#${source.number}`;
  const { identifier } = await saveIssue(ctx, {
    project: connector.projectPrefix,
    title: held ? heldTitle(where, what) : titleOf(source),
    body: held ? HELD_BODY : bodyOf(source),
    work: true,
    noDependency: `filed on ${where} as ${what}`,
    labels: labelsOf(connector, source),
    ...(dueOf(source) ? { dueAt: dueOf(source) } : {}),
    ...(review?.reviewerId ? { assignee: review.reviewerId } : {}),
  });
  const [created] = await tx
    .update(issues)
    .set({ triage: held ? "pending" : null })
    .where(and(eq(issues.orgId, connector.orgId), eq(issues.identifier, identifier)))
    .returning({ id: issues.id });
  const issueId = created!.id;
  // Into review once its triage is set: a held item's review clock waits for a person (reviewSinceAfter).
  if (review?.reviewerId) await saveIssue(ctx, { identifier, status: "review" });
  const sourceUpdatedAt = source.updatedAt ? new Date(source.updatedAt) : null;
  await tx
    .insert(intakeLinks)
    .values({ connectorId: connector.id, sourceId: source.id, sourceNumber: source.number, orgId: connector.orgId, issueId, kind: review ? "pull_request" : "issue", sourceUpdatedAt })
    .onConflictDoUpdate({ target: [intakeLinks.connectorId, intakeLinks.sourceId], set: { issueId, sourceOpen: true, signedDigestEnc: null, sourceUpdatedAt } });
  if (held) {
    const cipher = await ctx.keyring.forOrg(tx, connector.orgId);
    const now = ctx.clock.now();
    await holdText(tx, cipher, { orgId: connector.orgId, connectorId: connector.id, issueId, sourceId: source.id, reason: "filed", now }, { kind: "issue", author: source.author, title: titleOf(source), body: bodyOf(source) });
    await recordActivity({ tx, ctx, cipher, now }, { issueId, kind: "triage_held", facts: { reason: "filed" }, detail: { source: `${where} ${what}` } });
  }
  if (/^https?:\/\//.test(source.url)) {
    await saveAttachment(ctx, { issue: identifier, url: source.url.slice(0, 2000), title: `${where} ${what} by @${source.author}`.slice(0, 500) });
  }
  return { identifier, issueId };
}

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
async function takeComment(
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
