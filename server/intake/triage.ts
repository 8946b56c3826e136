import { and, asc, eq } from "drizzle-orm";
import { z } from "zod";
import { isOpen } from "../../db/schema/dispatch.ts";
import { connectors, intakeComments, intakeHeld, intakeLinks, issues } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import { systemPrincipal, type Ctx } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { DomainError, notFound } from "../errors.ts";
import { saveComment } from "../issues/comments.ts";
import { branchName } from "../issues/levels.ts";
import { lockOrgGraph } from "../issues/ranking.ts";
import { personOnly } from "../issues/refusals.ts";
import { identifierSchema } from "../issues/schemas.ts";
import { findIssue } from "../issues/lookups.ts";
import { inTransaction, isTerminal } from "../issues/store.ts";
import type { IssueRow } from "../issues/types.ts";
import { moveTriage } from "../issues/triage-moves.ts";
import { meter } from "../usage/meter.ts";
import { actorOf } from "../orgs/access.ts";
import { inScope, reachable, type Reach } from "../orgs/scope.ts";
import { providerName } from "./facts.ts";
import { heldTextOf, textDigest } from "./held.ts";

/**
 * Triage: a person reads outsiders' text and lets it in (docs/decisions/038). Every function here
 * is for a person at a human session (the Dash, `retasc triage` through /api/cli/triage): any
 * other principal, agent credentials above all, is refused FORBIDDEN before anything is read, so
 * no agent ever reads held text or releases it. An acceptance carries the SHA-256 of the text
 * the person was shown (`digest`) and is refused when the text held now differs: text that
 * changed between showing and accepting is never accepted. What was accepted is recorded (the
 * digest on the source's link, encrypted, and in the activity), so a later change at the source
 * puts the item back in triage.
 */

const digestSchema = z
  .string()
  .trim()
  .regex(/^[0-9a-f]{64}$/, "digest is the SHA-256 (hex) of the text shown, as the triage list gives it")
  .describe("the SHA-256 of the text the person was shown");
export const acceptTriageInput = z.object({ identifier: identifierSchema, digest: digestSchema });
export const releaseHeldCommentInput = z.object({ comment: z.string().trim().min(1).max(64), digest: digestSchema });
export const discardHeldCommentInput = z.object({ comment: z.string().trim().min(1).max(64) });
export const listTriageInput = z.object({ limit: z.number().int().min(1).max(50).default(20) });

/** The longest list one triage reply carries; `more` says there is more. */
export const TRIAGE_PAGE = 50;

export interface HeldIssueView {
  kind: "issue";
  identifier: string;
  status: string;
  /** Where it came from: "GitHub acme/web#12"; null for an item with no source link. */
  source: string | null;
  author: string | null;
  /** filed: from outside, never accepted; edited: changed at the source after a person accepted it. */
  reason: "filed" | "edited";
  title: string;
  body: string;
  /** The SHA-256 (hex) of this title and body: what accepting them carries. */
  digest: string;
  receivedAt: string;
}

export interface HeldCommentView {
  kind: "comment";
  id: string;
  identifier: string;
  author: string;
  /** Exactly the comment that releasing posts. */
  body: string;
  digest: string;
  receivedAt: string;
}

/** Only a person: every other principal is refused before anything is read. */
function requirePerson(ctx: Ctx, identifier: string, tried: string): void {
  if (ctx.principal.kind !== "human") throw personOnly(ctx.config, identifier, tried);
}

/** An item awaiting triage, with the text a person is to read: what is held, or (nothing held: the team's own, or from before held text) its own. */
function heldIssueView(cipher: OrgCipher, row: Pick<IssueRow, "identifier" | "status" | "titleEnc" | "bodyEnc" | "createdAt">, held: { textEnc: string; reason: "filed" | "edited"; receivedAt: Date } | null, source: string | null): HeldIssueView {
  const text = held ? heldTextOf(cipher, { kind: "issue", textEnc: held.textEnc }) : ({ kind: "issue", author: "", title: cipher.decrypt(row.titleEnc), body: cipher.decrypt(row.bodyEnc) ?? "" } as const);
  if (text.kind !== "issue") throw new Error("held issue text expected");
  return {
    kind: "issue",
    identifier: row.identifier,
    status: row.status,
    source,
    author: text.author || null,
    reason: held?.reason ?? "filed",
    title: text.title,
    body: text.body,
    digest: textDigest(text),
    receivedAt: (held?.receivedAt ?? row.createdAt).toISOString(),
  };
}

function heldCommentView(cipher: OrgCipher, identifier: string, row: { id: string; textEnc: string; receivedAt: Date }): HeldCommentView {
  const text = heldTextOf(cipher, { kind: "comment", textEnc: row.textEnc });
  return { kind: "comment", id: row.id, identifier, author: text.author, body: text.body, digest: textDigest(text), receivedAt: row.receivedAt.toISOString() };
}

const sourceName = (provider: "github" | "gitlab" | null, repo: string | null, number: number | null, kind: string | null) =>
  provider && repo && number !== null ? `${providerName[provider]} ${repo}${kind === "pull_request" && provider === "gitlab" ? "!" : "#"}${number}` : null;

/**
 * What waits for a person in the org, oldest first: open items awaiting triage with their text,
 * and outsiders' held comments on open items. At most `limit` of each; `more` says there is more.
 */
export async function listTriage(ctx: Ctx, raw: z.input<typeof listTriageInput> = {}) {
  requirePerson(ctx, "outside work", "reading outside work");
  const { limit } = listTriageInput.parse(raw);
  await actorOf(ctx);
  const orgId = ctx.principal.orgId;
  const cipher = await ctx.keyring.forOrg(ctx.db, orgId);
  const pending = await ctx.db
    .select({
      issue: { identifier: issues.identifier, status: issues.status, titleEnc: issues.titleEnc, bodyEnc: issues.bodyEnc, createdAt: issues.createdAt },
      held: { textEnc: intakeHeld.textEnc, reason: intakeHeld.reason, receivedAt: intakeHeld.receivedAt },
      provider: connectors.provider,
      repo: connectors.repo,
      number: intakeLinks.sourceNumber,
      linkKind: intakeLinks.kind,
    })
    .from(issues)
    .leftJoin(intakeHeld, and(eq(intakeHeld.issueId, issues.id), eq(intakeHeld.kind, "issue")))
    .leftJoin(intakeLinks, eq(intakeLinks.issueId, issues.id))
    .leftJoin(connectors, eq(connectors.id, intakeLinks.connectorId))
    .where(and(reachable(ctx.principal, issues), eq(issues.triage, "pending"), isOpen(issues.status)))
    .orderBy(asc(issues.createdAt), asc(issues.id))
    .limit(limit + 1);
  const comments = await ctx.db
    .select({ id: intakeHeld.id, textEnc: intakeHeld.textEnc, receivedAt: intakeHeld.receivedAt, identifier: issues.identifier })
    .from(intakeHeld)
    .innerJoin(issues, eq(issues.id, intakeHeld.issueId))
    .where(and(eq(intakeHeld.orgId, orgId), inScope(ctx.principal, issues.projectId), eq(intakeHeld.kind, "comment"), isOpen(issues.status)))
    .orderBy(asc(intakeHeld.receivedAt), asc(intakeHeld.id))
    .limit(limit + 1);
  return {
    issues: pending.slice(0, limit).map((r) => heldIssueView(cipher, r.issue, r.held?.textEnc ? (r.held as { textEnc: string; reason: "filed" | "edited"; receivedAt: Date }) : null, sourceName(r.provider, r.repo, r.number, r.linkKind))),
    comments: comments.slice(0, limit).map((c) => heldCommentView(cipher, c.identifier, c)),
    more: pending.length > limit || comments.length > limit,
  };
}

/**
 * What one issue has waiting for a person, for its page on the Dash: its own text when it awaits
 * triage, and the outsiders' comments held on it (at most TRIAGE_PAGE, oldest first).
 */
export async function heldForIssue(ctx: Ctx, raw: { identifier: string }) {
  const { identifier } = acceptTriageInput.pick({ identifier: true }).parse(raw);
  requirePerson(ctx, identifier, "reading held text");
  const row = await findIssue(ctx.db, ctx.principal, identifier);
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const heldOf = (kind: "issue" | "comment") =>
    ctx.db
      .select({ id: intakeHeld.id, textEnc: intakeHeld.textEnc, reason: intakeHeld.reason, receivedAt: intakeHeld.receivedAt })
      .from(intakeHeld)
      .where(and(eq(intakeHeld.orgId, ctx.principal.orgId), eq(intakeHeld.issueId, row.id), eq(intakeHeld.kind, kind)))
      .orderBy(asc(intakeHeld.receivedAt), asc(intakeHeld.id))
      .limit(TRIAGE_PAGE + 1);
  const [[ownText], comments] = await Promise.all([heldOf("issue"), heldOf("comment")]);
  const [link] = await ctx.db
    .select({ provider: connectors.provider, repo: connectors.repo, number: intakeLinks.sourceNumber, kind: intakeLinks.kind })
    .from(intakeLinks)
    .innerJoin(connectors, eq(connectors.id, intakeLinks.connectorId))
    .where(eq(intakeLinks.issueId, row.id));
  return {
    issue: row.triage === "pending" ? heldIssueView(cipher, row, ownText ?? null, link ? sourceName(link.provider, link.repo, link.number, link.kind) : null) : null,
    comments: comments.slice(0, TRIAGE_PAGE).map((c) => heldCommentView(cipher, row.identifier, c)),
    moreComments: comments.length > TRIAGE_PAGE,
  };
}

const changedSinceShown = (identifier: string) =>
  new DomainError("CONFLICT", `the text of ${identifier} changed after it was shown`, "Read it again, then accept what you read.", { identifier });

/**
 * A person accepts an item awaiting triage: the text they were shown (its SHA-256 is `digest`)
 * becomes the item's title and body, the item is dispatched like any other, and the digest is
 * recorded. Refused to every principal but a person, and when the text held is not the text shown.
 */
export async function acceptTriage(ctx: Ctx, raw: z.input<typeof acceptTriageInput>) {
  const input = acceptTriageInput.parse(raw);
  requirePerson(ctx, input.identifier, "accepting outside work");
  await actorOf(ctx);
  return inTransaction(ctx, async (scope) => {
    const { tx, cipher, now } = scope;
    const orgId = ctx.principal.orgId;
    // A review's clock starts at the acceptance (moveTriage), which re-ranks under the graph lock: taken before the row's.
    if ((await findIssue(tx, ctx.principal, input.identifier)).status === "review") await lockOrgGraph(tx, orgId);
    const row = await findIssue(tx, ctx.principal, input.identifier, { forUpdate: true });
    if (row.triage !== "pending") throw new DomainError("CONFLICT", `${row.identifier} is not awaiting triage`, "Reload the page: someone may have decided on it already.", { identifier: row.identifier });
    if (isTerminal(row.status)) throw new DomainError("CONFLICT", `${row.identifier} is ${row.status}`, "Terminal issues stay closed; nothing to accept.", { identifier: row.identifier });
    const [held] = await tx
      .select({ id: intakeHeld.id, textEnc: intakeHeld.textEnc, reason: intakeHeld.reason, receivedAt: intakeHeld.receivedAt })
      .from(intakeHeld)
      .where(and(eq(intakeHeld.issueId, row.id), eq(intakeHeld.kind, "issue")))
      .for("update");
    const shown = heldIssueView(cipher, row, held ?? null, null);
    if (shown.digest !== input.digest) throw changedSinceShown(row.identifier);
    const patch: Partial<typeof issues.$inferInsert> = {};
    if (held) {
      patch.titleEnc = cipher.encrypt(shown.title);
      patch.bodyEnc = cipher.encrypt(shown.body);
      // Once claimed, the branch stays the one the old title named (as save_issue keeps it).
      if (row.firstClaimedAt && row.branch === null) patch.branch = branchName(row.identifier, cipher.decrypt(row.titleEnc));
      await tx.delete(intakeHeld).where(eq(intakeHeld.id, held.id));
    }
    await moveTriage(tx, orgId, row.id, "accepted", now, patch);
    await tx.update(intakeLinks).set({ signedDigestEnc: cipher.encrypt(shown.digest) }).where(eq(intakeLinks.issueId, row.id));
    await recordActivity(scope, { issueId: row.id, kind: "triage_accepted", facts: { reason: shown.reason }, detail: { sha256: shown.digest } });
    meter(scope, "save_issue", "bookkeeping", row.id);
    await ctx.events.publish(tx, { orgId, kind: "issue.updated", issueId: row.id, identifier: row.identifier, status: row.status });
    return { identifier: row.identifier, triage: "accepted" as const, sha256: shown.digest };
  });
}

/** The held comment `id` of this org, locked, with its issue. */
async function lockedHeldComment(scope: { tx: Ctx["db"] }, reach: Reach, id: string) {
  const [row] = await scope.tx
    .select({ held: intakeHeld, identifier: issues.identifier })
    .from(intakeHeld)
    .innerJoin(issues, eq(issues.id, intakeHeld.issueId))
    .where(and(eq(intakeHeld.id, id), eq(intakeHeld.orgId, reach.orgId), inScope(reach, issues.projectId), eq(intakeHeld.kind, "comment")))
    .for("update", { of: intakeHeld });
  if (!row) throw notFound(`held comment ${id}`, "It may have been released or discarded already; reload.");
  return row;
}

/**
 * A person releases an outsider's held comment: exactly the text shown (`digest`) is posted to
 * the thread, attributed to its author's handle as intake's comments are, and from then on read
 * by agents like any comment.
 */
export async function releaseHeldComment(ctx: Ctx, raw: z.input<typeof releaseHeldCommentInput>) {
  const input = releaseHeldCommentInput.parse(raw);
  requirePerson(ctx, "its issue", "releasing an outsider's comment");
  await actorOf(ctx);
  return inTransaction(ctx, async (scope) => {
    const { tx, cipher } = scope;
    const orgId = ctx.principal.orgId;
    const { held, identifier } = await lockedHeldComment(scope, ctx.principal, input.comment);
    const shown = heldCommentView(cipher, identifier, held);
    if (shown.digest !== input.digest) throw changedSinceShown(identifier);
    // Posted as intake posts the team's comments (the system, attributed in its text); the activity names the person.
    const system: Ctx = { ...ctx, db: tx, principal: systemPrincipal(orgId) };
    const saved = await saveComment(system, { issue: identifier, body: shown.body });
    await tx
      .insert(intakeComments)
      .values({ orgId, connectorId: held.connectorId, sourceId: held.sourceId, commentId: saved.id })
      .onConflictDoUpdate({ target: [intakeComments.connectorId, intakeComments.sourceId], set: { commentId: saved.id } });
    await tx.delete(intakeHeld).where(eq(intakeHeld.id, held.id));
    await recordActivity(scope, { issueId: held.issueId, kind: "comment_released", detail: { commentId: saved.id, sha256: shown.digest } });
    meter(scope, "save_issue", "bookkeeping", held.issueId);
    return { id: saved.id, issue: identifier, released: true as const, sha256: shown.digest };
  });
}

/** A person drops an outsider's held comment: nobody reads it from then on, and the same comment is never taken in again. */
export async function discardHeldComment(ctx: Ctx, raw: z.input<typeof discardHeldCommentInput>) {
  const input = discardHeldCommentInput.parse(raw);
  requirePerson(ctx, "its issue", "discarding an outsider's comment");
  await actorOf(ctx);
  return inTransaction(ctx, async (scope) => {
    const { tx } = scope;
    const { held, identifier } = await lockedHeldComment(scope, ctx.principal, input.comment);
    await tx.insert(intakeComments).values({ orgId: ctx.principal.orgId, connectorId: held.connectorId, sourceId: held.sourceId, commentId: null }).onConflictDoNothing();
    await tx.delete(intakeHeld).where(eq(intakeHeld.id, held.id));
    await recordActivity(scope, { issueId: held.issueId, kind: "held_comment_discarded" });
    return { issue: identifier, discarded: true as const };
  });
}
