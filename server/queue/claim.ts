import type { z } from "zod";
import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import { DISPATCH_STATUSES } from "../../db/schema/dispatch.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { constantTimeEqual, randomToken, sha256, type OrgCipher } from "../crypto/index.ts";
import { DomainError } from "../errors.ts";
import { noticeAfterCommit, type Notice } from "../events/index.ts";
import { claimMismatch, currentHolder, holderSession, isLeaseLive, requireLiveToken, sameKey, sameSession, type Holder } from "../issues/fencing.ts";
import { quarantinedRefusal } from "../issues/quarantine.ts";
import { alreadyClaimed, selfReview } from "../issues/refusals.ts";
import { findIssue, openBlockersOf } from "../issues/lookups.ts";
import { inOrder, inTransaction, issueRowFrom, type WriteScope } from "../issues/store.ts";
import type { IssueRow } from "../issues/types.ts";
import { issueViewReads, renderIssueView, viewReadsFrom, type ViewReads, type ViewReadsJson } from "../issues/views.ts";
import { RECORDED_EXPIRY } from "../metrics/index.ts";
import { newId } from "../orgs/index.ts";
import { OUTBOX_CHANNEL } from "../outbox/index.ts";
import { claimDiscussion, readClaimDiscussion, type ClaimDiscussionJson } from "./claim-discussion.ts";
import { renew } from "./lease.ts";
import { claimIssueInput } from "./schemas.ts";
import { meter } from "../usage/meter.ts";

/**
 * Per-key live-claim cap. retasc_key_budget counts under an advisory lock on the key, which
 * serialises one key's claims, so the cap holds exactly even when eight agents share a key.
 * The count goes out with `then` (the claim's own read) in one round trip.
 */
export interface Budget<T> {
  live: number;
  cap: number;
  /** What the claim read in the same round trip. */
  then: T;
}

export async function claimBudget<T>(scope: WriteScope, then: () => PromiseLike<T>): Promise<Budget<T>> {
  const { tx, ctx, now } = scope;
  const cap = ctx.principal.claimCap ?? ctx.config.CLAIM_CAP_DEFAULT;
  const keyId = ctx.principal.keyId;
  if (!keyId) return { live: 0, cap, then: await then() };
  const [rows, result] = await inOrder(
    () => query<{ live: number }>(tx, sql`select retasc_key_budget(${keyId}::text, ${now.toISOString()}::timestamptz, ${ctx.principal.orgId}::text) as live`),
    then,
  );
  return { live: Number(rows[0]!.live), cap, then: result };
}

export const claimCapError = (cap: number) =>
  new DomainError(
    "CLAIM_CAP",
    `this key already holds ${cap} live claims, its cap`,
    "Finish or release_issue one of your claims before taking another.",
    { cap },
  );

/** What retasc_take_lease returns (db/migrations/0024_claim_discussion_in_take_lease.sql; narrowed, 0080). */
export interface TakenLease {
  /** The columns the reply reads (retasc_view_row, nulls left out), not the whole row: read it with issueRowFrom for replyFor only. */
  issue: Record<string, unknown>;
  /** The view's reads with no lease (the reply states the lease itself and leaves the view's out). */
  reads: ViewReadsJson;
  discussion: ClaimDiscussionJson;
  /** When the lease started. */
  now: string;
  notices: Notice[];
}

/** What retasc_take_lease returns instead when the lapse the claim recorded quarantined the issue: no lease (decision 055). */
export interface QuarantinedAtClaim {
  quarantined: true;
  identifier: string;
  notices: Notice[];
}

/** Who takes a lease, from when, the new lease's id, token hash and TTL: the lease arguments of the dispatch functions. */
export function leaseFields(ctx: Ctx, now: Date, claimToken: string) {
  const p = ctx.principal;
  return {
    userId: p.userId,
    keyId: p.keyId,
    runtime: p.runtime,
    sessionId: p.sessionId ?? null,
    now: now.toISOString(),
    leaseId: newId(),
    tokenHash: sha256(claimToken),
    ttlMs: ctx.config.leaseTtlMs,
  };
}

/**
 * What keeps a lease alive: `calls` when the claim came in an MCP session (its own calls renew it;
 * heartbeat only before a silence longer than the lease), `heartbeat` for a client with no session.
 */
export const renewalOf = (principal: Ctx["principal"]) => (principal.sessionId ? ("calls" as const) : ("heartbeat" as const));

export function claimReply(cipher: OrgCipher, taken: TakenLease, claimToken: string, otherClaims: number, principal: Ctx["principal"]) {
  const row = issueRowFrom(taken.issue);
  const reply = replyFor(cipher, row, viewReadsFrom(taken.reads, row.id, principal), taken.discussion, new Date(taken.now), claimToken, otherClaims, renewalOf(principal));
  return { ...reply, [RECORDED_EXPIRY]: taken.notices.some((notice) => notice.channel === OUTBOX_CHANNEL) };
}

/**
 * A claim states each fact once: the lease (fence, expiresAt, the token), the branch and the
 * checkpoint at the top, and the issue as get_issue reads it without them (its lease is this
 * claim, held by the caller). The issue's latest comments and attachments come along
 * (claim-discussion.ts).
 */
function replyFor(
  cipher: OrgCipher,
  row: IssueRow,
  reads: ViewReads,
  discussion: ClaimDiscussionJson,
  now: Date,
  claimToken: string,
  otherClaims: number,
  renewal: ReturnType<typeof renewalOf>,
) {
  const view = renderIssueView(cipher, row, reads, now);
  const { identifier, fence, branch, checkpoint, lease: _lease, held: _held, statusNote: _note, ...issue } = view;
  return {
    identifier,
    claimToken,
    fence,
    expiresAt: row.leaseExpiresAt!.toISOString(),
    renewal,
    branch,
    checkpoint,
    otherClaims,
    issue,
    ...claimDiscussion(cipher, discussion, identifier),
  };
}
export type ClaimReply = ReturnType<typeof replyFor> & { rebound?: true; [RECORDED_EXPIRY]?: boolean };

/**
 * Recovery (decision 036): the live lease moves to the calling session with a new token (same
 * fence, lease renewed, the old token void, the checkpoint untouched). Reached with the live
 * token from any session (a restarted agent, a subagent handed its orchestrator's token) or
 * without it from the holding session (a token lost to context compaction). On claim_issue's
 * refusal path only, so dispatch pays nothing for it.
 */
async function rebind(scope: WriteScope, row: IssueRow, holder: Holder, otherClaims: number): Promise<ClaimReply> {
  const { tx, now } = scope;
  const claimToken = randomToken("rtclm_", 24);
  const leaseTokenHash = sha256(claimToken);
  const expiresAt = await renew(scope, row, { tokenHash: leaseTokenHash });
  const moved = holderSession(holder) !== (scope.ctx.principal.sessionId ?? null);
  await recordActivity(scope, {
    issueId: row.id,
    kind: "heartbeat",
    facts: { fence: row.fence },
    detail: { rebound: true, runtime: holder.runtime, ...(moved ? { movedSession: true } : {}) },
  });
  const rebound = { ...row, leaseTokenHash, leaseExpiresAt: expiresAt };
  const [reads, discussion] = await inOrder(() => issueViewReads(tx, scope.ctx.principal, row.id, now, row.orgId), () => readClaimDiscussion(tx, row.id, row.orgId));
  return { ...replyFor(scope.cipher, rebound, reads, discussion, now, claimToken, otherClaims, renewalOf(scope.ctx.principal)), rebound: true };
}

/** Whether the live lease may move to the caller: its token, or the holding session itself. */
function mayRebind(row: IssueRow, holder: Holder, principal: Ctx["principal"], claimToken: string | undefined): boolean {
  if (claimToken) return row.leaseTokenHash !== null && constantTimeEqual(sha256(claimToken), row.leaseTokenHash);
  return sameSession(holder, principal);
}

/**
 * Takes the lease on a locked, dispatchable row, in one statement (retasc_take_lease). Ends (and
 * records) an expired predecessor; null when that lapse quarantined the issue, which it then leaves.
 */
export async function claimRow(scope: WriteScope, row: IssueRow, otherClaims: number): Promise<ClaimReply | null> {
  // The lease starts once the row lock is held, which can be well after the transaction
  // began; reading the clock again keeps lease intervals of one issue from ever overlapping.
  scope.now = new Date(Math.max(scope.now.getTime(), scope.ctx.clock.now().getTime()));
  const claimToken = randomToken("rtclm_", 24);
  const lease = leaseFields(scope.ctx, scope.now, claimToken);
  const [taken] = await query<{ taken: TakenLease | QuarantinedAtClaim }>(
    scope.tx,
    sql`select retasc_take_lease(${row.id}::text, ${scope.ctx.principal.orgId}::text, ${lease.userId}::text, ${lease.keyId}::text,
      ${lease.runtime}::text, ${lease.now}::timestamptz, ${lease.leaseId}::text, ${lease.tokenHash}::text, ${lease.ttlMs}::bigint,
      ${lease.sessionId}::text) as taken`,
  );
  noticeAfterCommit(scope.tx, taken!.taken.notices);
  if ("quarantined" in taken!.taken) return null;
  return claimReply(scope.cipher, taken!.taken, claimToken, otherClaims, scope.ctx.principal);
}

/** Claims one named issue, ignoring lanes; refuses only for a stated reason. */
export async function claimIssue(ctx: Ctx, raw: z.input<typeof claimIssueInput>) {
  const { identifier, claimToken } = claimIssueInput.parse(raw);
  const claimed = await inTransaction(ctx, async (scope) => {
    const { tx, now } = scope;
    const budget = await claimBudget(scope, () => findIssue(tx, ctx.principal, identifier, { forUpdate: true }));
    const row = budget.then;
    // Charged only if it commits: every refusal below rolls the charge back with it.
    meter(scope, "claim_issue", "dispatch", row.id);
    if (!row.work) {
      throw new DomainError("CONTAINER", `${identifier} is a container (work:false) and is never claimed`, "Claim one of its children instead.", {
        identifier,
      });
    }
    if (row.quarantinedAt) throw quarantinedRefusal(ctx.config, row, "claim");
    if (!(DISPATCH_STATUSES as readonly string[]).includes(row.status)) {
      throw new DomainError(
        "STATUS_NOT_CLAIMABLE",
        `${identifier} is ${row.status}`,
        row.status === "blocked"
          ? "It is flagged blocked on something external; a person clears that flag."
          : "Terminal issues are not claimed; call next_issue for open work.",
        { identifier, status: row.status },
      );
    }
    if (isLeaseLive(row, now)) {
      const holder = (await currentHolder(tx, row, now))!;
      if (mayRebind(row, holder, ctx.principal, claimToken)) return rebind(scope, row, holder, Math.max(0, budget.live - (sameKey(holder, ctx.principal) ? 1 : 0)));
      if (sameKey(holder, ctx.principal)) throw await claimMismatch(scope, row, holder);
      throw alreadyClaimed(identifier, holder, "claim");
    }
    // A token names a lease to take over; that lease is gone: refused as any write with it is (STALE_CLAIM), never a fresh claim.
    if (claimToken) await requireLiveToken(scope, row, claimToken);
    if (row.triage === "pending") {
      throw new DomainError("AWAITING_TRIAGE", `${identifier} came from outside the team and awaits triage`, "A person decides on outside work, not an agent; call next_issue for other work.", { identifier });
    }
    if (row.openBlockerCount > 0) {
      const { blockers, outside } = await openBlockersOf(tx, ctx.principal, row.id);
      // A blocker outside the caller's projects still blocks; it is counted, never named (decision 042).
      const named = blockers.map((b) => `${b.identifier} (${b.verification === "pending" ? "done, CI verification pending" : b.status})`);
      const unnamed = outside > 0 ? [`${outside} issue${outside === 1 ? "" : "s"} outside your projects`] : [];
      throw new DomainError(
        "BLOCKED",
        `${identifier} waits on ${[...named, ...unnamed].join(", ")}`,
        outside > 0 && blockers.length === 0
          ? "What it waits on is outside your projects; call next_issue for other work."
          : "Work on a blocker instead (next_issue hands out the most urgent one).",
        { identifier, openBlockers: blockers, ...(outside > 0 ? { openBlockersOutsideScope: outside } : {}) },
      );
    }
    if (row.status === "review" && row.submitterId && row.submitterId === ctx.principal.userId) throw selfReview(identifier);
    if (budget.live >= budget.cap) throw claimCapError(budget.cap);
    return (await claimRow(scope, row, budget.live)) ?? { quarantinedNow: row };
  });
  // Refused after the commit, so the quarantine this claim found stays.
  if ("quarantinedNow" in claimed) throw quarantinedRefusal(ctx.config, (await findIssue(ctx.db, ctx.principal, identifier)), "claim");
  return claimed;
}
