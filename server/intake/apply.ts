import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { intakeComments, intakeLinks, issues, type ConnectorProvider } from "../../db/schema/index.ts";
import { systemPrincipal, withPrincipal, type Ctx, type Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { saveIssue } from "../issues/index.ts";
import { saveAttachment } from "../issues/attachments.ts";
import { retractComment, saveComment } from "../issues/comments.ts";
import { BODY_MAX_CHARS } from "../issues/schemas.ts";
import { isTerminal } from "../issues/store.ts";
import { WRITE_BACK_MARKER, type IntakeEvent, type SourceComment, type SourceIssue } from "./events.ts";

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

/**
 * Applies one intake event to the connector's project, inside the caller's transaction `tx`,
 * as the system. Effect once: the source issue and comment ids are keys (intake_links,
 * intake_comments) taken under a per-source-issue lock, so a repeated or concurrent event
 * finds what the first one made. `outsider` is the author's standing as the provider told it.
 */
export async function applyIntakeEvent(services: Services, tx: Db, connector: ConnectorFacts, event: Extract<IntakeEvent, { kind: "issue" | "comment" }>, outsider: boolean): Promise<string> {
  const { ctx, link } = await lockedLink(services, tx, connector, event.issue);
  const source = event.issue;
  if (!link) {
    // Events about an issue filed before the connector existed create it too, while it is open there.
    if (!source.open || (event.kind === "issue" && event.action === "deleted")) return "skipped";
    const identifier = await fileIssue(ctx, tx, connector, source, outsider);
    if (event.kind === "comment" && event.action === "created") await addComment(ctx, tx, connector, identifier, event.comment);
    return "created";
  }
  const identifier = link.identifier;
  if (event.kind === "comment") return applyComment(ctx, tx, connector, identifier, event);
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
      await syncFields(ctx, connector, identifier, source);
      return "updated";
    default:
      if (isTerminal(link.status)) return "unchanged";
      await syncFields(ctx, connector, identifier, source);
      return "updated";
  }
}

/**
 * The system's context inside `tx`, with the source's lock taken and its link (if any) read:
 * every event about one source issue or request is applied one at a time.
 */
export async function lockedLink(services: Services, tx: Db, connector: ConnectorFacts, source: { id: string }) {
  const ctx: Ctx = { ...withPrincipal({ ...services, db: tx }, systemPrincipal(connector.orgId)) };
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`intake:${connector.id}:${source.id}`}))`);
  const [link] = await tx
    .select({ issueId: intakeLinks.issueId, identifier: issues.identifier, status: issues.status, sourceOpen: intakeLinks.sourceOpen })
    .from(intakeLinks)
    .innerJoin(issues, eq(issues.id, intakeLinks.issueId))
    .where(and(eq(intakeLinks.connectorId, connector.id), eq(intakeLinks.sourceId, source.id)));
  return { ctx, link };
}

export const setLinkOpen = (tx: Db, connector: ConnectorFacts, source: { id: string }, open: boolean) =>
  tx.update(intakeLinks).set({ sourceOpen: open }).where(and(eq(intakeLinks.connectorId, connector.id), eq(intakeLinks.sourceId, source.id)));

export async function syncFields(ctx: Ctx, connector: ConnectorFacts, identifier: string, source: SourceIssue) {
  await saveIssue(ctx, { identifier, title: titleOf(source), body: bodyOf(source), labels: labelsOf(connector, source), dueAt: dueOf(source) });
}

/**
 * Files the source as a Retasc issue and links it. A pull/merge request (`review`) is assigned
 * to the reviewer and put in review, so it sits on the reviewer's lane; without a reviewer (the
 * preset one left the org) it stays unassigned in todo. A reopened request whose item ended is
 * filed again and its link moved to the new item.
 */
export async function fileIssue(ctx: Ctx, tx: Db, connector: ConnectorFacts, source: SourceIssue, outsider: boolean, review?: { reviewerId: string | null }): Promise<string> {
  const where = providerName[connector.provider];
  const what = review ? `${connector.provider === "github" ? "pull" : "merge"} request ${connector.repo}${connector.provider === "github" ? "#" : "!"}${source.number}` : `${connector.repo}#${source.number}`;
  const { identifier } = await saveIssue(ctx, {
    project: connector.projectPrefix,
    title: titleOf(source),
    body: bodyOf(source),
    work: true,
    noDependency: `filed on ${where} as ${what}`,
    labels: labelsOf(connector, source),
    ...(dueOf(source) ? { dueAt: dueOf(source) } : {}),
    ...(review?.reviewerId ? { assignee: review.reviewerId } : {}),
  });
  if (review?.reviewerId) await saveIssue(ctx, { identifier, status: "review" });
  const [created] = await tx
    .update(issues)
    .set({ triage: outsider && !connector.triageAll ? "pending" : null })
    .where(and(eq(issues.orgId, connector.orgId), eq(issues.identifier, identifier)))
    .returning({ id: issues.id });
  await tx
    .insert(intakeLinks)
    .values({ connectorId: connector.id, sourceId: source.id, sourceNumber: source.number, orgId: connector.orgId, issueId: created!.id, kind: review ? "pull_request" : "issue" })
    .onConflictDoUpdate({ target: [intakeLinks.connectorId, intakeLinks.sourceId], set: { issueId: created!.id, sourceOpen: true } });
  if (/^https?:\/\//.test(source.url)) {
    await saveAttachment(ctx, { issue: identifier, url: source.url.slice(0, 2000), title: `${where} ${what} by @${source.author}`.slice(0, 500) });
  }
  return identifier;
}

/**
 * A source comment created or deleted, on the linked issue or review item `identifier` (the
 * caller holds the source's lock): created, a comment attributed to its author's handle, once
 * per source comment id; deleted, the comment it made is retracted.
 */
export async function applyComment(ctx: Ctx, tx: Db, connector: ConnectorFacts, identifier: string, event: { action: "created" | "deleted"; comment: SourceComment }): Promise<string> {
  if (event.action === "created") return (await addComment(ctx, tx, connector, identifier, event.comment)) ? "commented" : "skipped";
  const [mapped] = await tx
    .select({ commentId: intakeComments.commentId })
    .from(intakeComments)
    .where(and(eq(intakeComments.connectorId, connector.id), eq(intakeComments.sourceId, event.comment.id)));
  if (!mapped) return "skipped";
  await retractComment(ctx, { comment: mapped.commentId, note: `deleted on ${providerName[connector.provider]}` });
  return "retracted";
}

/** Our own write-back comments (their marker) and empty ones are skipped. */
async function addComment(ctx: Ctx, tx: Db, connector: ConnectorFacts, identifier: string, comment: SourceComment): Promise<boolean> {
  if (comment.body.includes(WRITE_BACK_MARKER) || !comment.body.trim()) return false;
  const [seen] = await tx
    .select({ commentId: intakeComments.commentId })
    .from(intakeComments)
    .where(and(eq(intakeComments.connectorId, connector.id), eq(intakeComments.sourceId, comment.id)));
  if (seen) return false;
  const saved = await saveComment(ctx, { issue: identifier, body: `@${comment.author} on ${providerName[connector.provider]}:\n\n${comment.body}`.slice(0, 50_000) });
  await tx.insert(intakeComments).values({ connectorId: connector.id, sourceId: comment.id, commentId: saved.id });
  return true;
}
