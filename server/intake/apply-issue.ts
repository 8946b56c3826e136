/** A source issue or request as a Retasc item: filed, or kept in step, with an outsider's text held for a person. */
import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { intakeLinks, issues } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { saveIssue } from "../issues/index.ts";
import { saveAttachment } from "../issues/attachments.ts";
import { lockOrgGraph } from "../issues/ranking.ts";
import { moveTriage } from "../issues/triage-moves.ts";
import type { SourceIssue } from "./events.ts";
import { bodyOf, dueOf, labelsOf, providerName, titleOf, type ConnectorFacts } from "./facts.ts";
import { dropHeld, HELD_BODY, heldTitle, holdText, isHeld, textDigest } from "./held.ts";
import type { LockedLink } from "./links.ts";

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
