import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { intakeLinks } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { saveIssue } from "../issues/index.ts";
import { saveComment } from "../issues/comments.ts";
import { isTerminal } from "../issues/store.ts";
import { applyComment } from "./apply-comment.ts";
import { fileIssue, syncSource } from "./apply-issue.ts";
import { providerName, type ConnectorFacts } from "./facts.ts";
import { isStale, lockedLink, noteSourceUpdate, setLinkOpen } from "./links.ts";
import type { IntakeEvent } from "./events.ts";

/** Said on an item filed while the connector's reviewer is no longer an active member. */
const NO_REVIEWER =
  "Filed unassigned: the connector's reviewer is no longer an active member of this org. Assign a reviewer and move it to review, or pick a new reviewer on the Connectors page for the next requests.";

/**
 * Applies one pull/merge request event (docs/decisions/026-intake-pull-requests.md, 032), inside
 * the caller's transaction, as the system. A request from outside the team becomes a review item
 * on the reviewer's lane (unassigned in todo when `reviewerId` is null: the reviewer left); the
 * team's own are ignored. Merged → done, closed unmerged → canceled,
 * edits kept in step; reopened after its item ended, it is filed again. Effect once by the
 * request's id, under the same per-source lock as issues.
 */
export async function applyPullRequestEvent(services: Services, tx: Db, connector: ConnectorFacts, event: Extract<IntakeEvent, { kind: "pull_request" }>, outsider: boolean): Promise<string> {
  const { ctx, link, cipher } = await lockedLink(services, tx, connector, event.issue);
  const source = event.issue;
  const review = { reviewerId: connector.reviewerId };
  // An outsider's request text waits for a person, as an issue's does (decision 038).
  const held = outsider && !connector.triageAll;
  const where = `${providerName[connector.provider]} (${connector.repo}${connector.provider === "github" ? "#" : "!"}${source.number})`;
  if (!link) {
    if (!outsider) return "ignored";
    if (!source.open) return "skipped";
    const { identifier } = await fileIssue(ctx, tx, connector, source, { held, review });
    if (!review.reviewerId) await saveComment(ctx, { issue: identifier, body: NO_REVIEWER });
    return "created";
  }
  if (isStale(link, source, event.action)) return "stale";
  await noteSourceUpdate(tx, connector, source);
  const identifier = link.identifier;
  switch (event.action) {
    case "closed": {
      // Marked first, as for issues: nothing is written back to a request.
      await setLinkOpen(tx, connector, source, false);
      if (isTerminal(link.status)) return "unchanged";
      try {
        if (event.merged) await saveIssue(ctx, { identifier, status: "done" });
        else await saveIssue(ctx, { identifier, status: "canceled", cancelReason: `closed unmerged on ${where}` });
        return event.merged ? "done" : "canceled";
      } catch (error) {
        // Held by the reviewer's agent: its holder finishes or releases it; the thread says what happened.
        if (!(error instanceof DomainError) || (error.code !== "ALREADY_CLAIMED" && error.code !== "STALE_CLAIM")) throw error;
        await saveComment(ctx, { issue: identifier, body: `The request was ${event.merged ? "merged" : "closed unmerged"} on ${where}.` });
        return "noted";
      }
    }
    case "reopened": {
      if (!isTerminal(link.status)) {
        await setLinkOpen(tx, connector, source, true);
        return syncSource(ctx, tx, cipher, connector, link, source, held);
      }
      // Terminal issues stay closed: the reopened request is reviewed again as a new item.
      const { identifier: again } = await fileIssue(ctx, tx, connector, source, { held, review });
      if (!review.reviewerId) await saveComment(ctx, { issue: again, body: NO_REVIEWER });
      await saveComment(ctx, { issue: identifier, body: `Reopened on ${where}; its review continues in ${again}.` });
      return "created";
    }
    default:
      if (isTerminal(link.status)) return "unchanged";
      return syncSource(ctx, tx, cipher, connector, link, source, held);
  }
}

/**
 * A comment on a followed request, on its review item, attributed to the source handle, once
 * per source comment id (decision 032); an outsider's is held for a person (decision 038). A request with no item (the team's own, or one from
 * before the stream was on) is not filed for a comment. GitHub's issue_comment names the
 * request by number only: its link is found by number, then locked by its source id.
 */
export async function applyRequestComment(services: Services, tx: Db, connector: ConnectorFacts, event: Extract<IntakeEvent, { kind: "request_comment" }>, commenterOutside: boolean): Promise<string> {
  let sourceId = event.request.id;
  if (sourceId === null) {
    const [found] = await tx
      .select({ sourceId: intakeLinks.sourceId })
      .from(intakeLinks)
      .where(and(eq(intakeLinks.connectorId, connector.id), eq(intakeLinks.kind, "pull_request"), eq(intakeLinks.sourceNumber, event.request.number)));
    if (!found) return "skipped";
    sourceId = found.sourceId;
  }
  const { ctx, link, cipher } = await lockedLink(services, tx, connector, { id: sourceId });
  if (!link) return "skipped";
  return applyComment(ctx, tx, cipher, connector, link, event, commenterOutside);
}
