import type { Db } from "../../db/client.ts";
import type { Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { saveIssue } from "../issues/index.ts";
import { saveComment } from "../issues/comments.ts";
import { isTerminal } from "../issues/store.ts";
import { applyComment, takeComment } from "./apply-comment.ts";
import { fileIssue, syncSource } from "./apply-issue.ts";
import type { IntakeEvent } from "./events.ts";
import { providerName, type ConnectorFacts } from "./facts.ts";
import { isStale, lockedLink, noteSourceUpdate, setLinkOpen } from "./links.ts";

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
