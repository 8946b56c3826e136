import { desc, eq, sql } from "drizzle-orm";
import { leases, user } from "../../db/schema/index.ts";
import type { Db } from "../../db/client.ts";
import { constantTimeEqual, sha256 } from "../crypto/index.ts";
import { DomainError } from "../errors.ts";
import type { Principal } from "../context.ts";
import { latestCheckpoint } from "./lookups.ts";
import { type WriteScope } from "./store.ts";
import type { IssueRow } from "./types.ts";

/**
 * Fencing (decision 036): the claim token is the capability. A lease is held by the MCP session
 * that took it (or moved it to itself with the token); the key only says whose work it is. Another
 * session of the same key is another holder, told CLAIM_MISMATCH; the holding session is
 * recognized without its token only where its docs say so (heartbeat, checkpoint, release, claim).
 */

/** Whether the issue is held now: its row names a lease whose expiry is still ahead. */
export function isLeaseLive(row: Pick<IssueRow, "leaseId" | "leaseExpiresAt">, now: Date): boolean {
  return row.leaseId !== null && row.leaseExpiresAt !== null && row.leaseExpiresAt.getTime() > now.getTime();
}

/** Who holds an issue right now, for refusals and check_claim. */
export async function currentHolder(tx: Db, row: IssueRow, now: Date) {
  if (!isLeaseLive(row, now)) return null;
  const rows = await tx
    .select({
      userId: leases.userId,
      runtime: leases.runtime,
      keyId: leases.keyId,
      sessionId: leases.sessionId,
      fence: leases.fence,
      claimedAt: leases.claimedAt,
      renewedAt: leases.heartbeatAt,
      renewedBy: leases.renewedBy,
      expiresAt: leases.expiresAt,
      email: user.email,
      name: user.name,
    })
    .from(leases)
    .leftJoin(user, eq(user.id, leases.userId))
    .where(eq(leases.id, row.leaseId!));
  const found = rows[0];
  if (!found) return null;
  const { sessionId, ...holder } = found;
  // The issue row's expiry is the live one (a session's calls renew both; a rebind too).
  return {
    ...holder,
    claimedAt: holder.claimedAt.toISOString(),
    renewedAt: holder.renewedAt.toISOString(),
    expiresAt: (row.leaseExpiresAt ?? holder.expiresAt).toISOString(),
    [HOLDER_SESSION]: sessionId,
  };
}

/** The holding session, under a symbol key: compared here, never sent (JSON drops symbol keys). */
const HOLDER_SESSION = Symbol("holderSession");
export type Holder = NonNullable<Awaited<ReturnType<typeof currentHolder>>>;

export const describeHolder = (h: Holder) => `${h.name ?? h.email ?? h.userId} (${h.runtime}) until ${h.expiresAt}`;

type SessionHolder = { keyId: string | null; sessionId?: string | null; [HOLDER_SESSION]?: string | null };

/** The caller's own session holds it: the same key in the same MCP session (a client with no session never matches). */
export function sameSession(holder: SessionHolder | null, principal: Principal): boolean {
  if (!holder || !principal.sessionId) return false;
  const session = HOLDER_SESSION in holder ? holder[HOLDER_SESSION] : holder.sessionId;
  return session === principal.sessionId && holder.keyId === principal.keyId;
}

/** The session holding the lease, for a rebind's activity. */
export const holderSession = (holder: Holder): string | null => holder[HOLDER_SESSION];

/** Another holder on the caller's own key: a sibling agent, a subagent, or the caller before a restart. */
export function sameKey(holder: SessionHolder | null, principal: Principal): boolean {
  return !!holder && holder.keyId !== null && holder.keyId === principal.keyId;
}

/** How a holding session that lost its token gets it back. */
export const recoverHint = (identifier: string) =>
  `Lost the claimToken? From this same session, claim_issue {identifier:"${identifier}"} gives you this lease back (rebound:true, same fence) with a new claimToken; the old one stops working.`;

/** The holding session sent no token or a wrong one: it still holds the issue and is told so. */
function youHoldRefusal(row: IssueRow, holder: Holder, sent: boolean): DomainError {
  return new DomainError(
    "STALE_CLAIM",
    sent
      ? `you hold ${row.identifier} (fence ${holder.fence}, until ${holder.expiresAt}), but that claimToken is not this claim's`
      : `you hold ${row.identifier} (fence ${holder.fence}, until ${holder.expiresAt}); this write needs its claimToken`,
    `Keep working on it and pass the claimToken your claim of ${row.identifier} returned. ${recoverHint(row.identifier)}`,
    { identifier: row.identifier, holder, youHold: true, currentFence: row.fence },
  );
}

/**
 * Another session of the caller's key holds the issue, and the caller showed no live token: the
 * truth, with what that holder said last, and the one way to take it over (its token).
 */
export async function claimMismatch(scope: WriteScope, row: IssueRow, holder: Holder): Promise<DomainError> {
  const checkpoint = await latestCheckpoint(scope.tx, row.id);
  const said = checkpoint ? scope.cipher.decrypt(checkpoint.nextEnc) ?? scope.cipher.decrypt(checkpoint.doneEnc) : null;
  const gist = said ? said.slice(0, 160) : null;
  return new DomainError(
    "CLAIM_MISMATCH",
    `${row.identifier} is held by another session of your key (${holder.runtime}, fence ${holder.fence}) since ${holder.claimedAt}, until ${holder.expiresAt}` +
      (gist ? `; its last checkpoint: "${gist}"` : ""),
    `Another agent on your key is working on it: leave it and call next_issue. If you are that agent restarted and still have its claimToken, claim_issue {identifier:"${row.identifier}", claimToken} moves the lease to you.`,
    { identifier: row.identifier, holder, otherSession: true, lastCheckpoint: gist, currentFence: row.fence },
  );
}

/** The issue's last lease, ended or not, with who held it: read only on refusal paths. */
export async function lastLeaseOf(tx: Db, row: IssueRow) {
  const [last] = await tx
    .select({
      fence: leases.fence,
      keyId: leases.keyId,
      sessionId: leases.sessionId,
      tokenHash: leases.tokenHash,
      runtime: leases.runtime,
      endReason: leases.endReason,
      endedAt: leases.endedAt,
      who: sql<string>`coalesce(${user.name}, ${user.email}, ${leases.userId})`,
    })
    .from(leases)
    .leftJoin(user, eq(user.id, leases.userId))
    .where(eq(leases.issueId, row.id))
    .orderBy(desc(leases.fence))
    .limit(1);
  return last ?? null;
}
type LastLease = NonNullable<Awaited<ReturnType<typeof lastLeaseOf>>>;

/** Is this the lease that finished the issue, shown by its token or by its session? */
function finishedBy(last: LastLease, principal: Principal, token: string | undefined): boolean {
  if (last.endReason !== "finished") return false;
  if (token && last.tokenHash && constantTimeEqual(sha256(token), last.tokenHash)) return true;
  return sameSession(last, principal);
}

/**
 * The issue's last lease when a finish (done, review, cancel) ended it and the caller's lease was
 * that one: a finish retried after it succeeded. Nobody else is told they finished it.
 */
export async function finishedByCaller(scope: WriteScope, row: IssueRow, token: string | undefined) {
  const last = await lastLeaseOf(scope.tx, row);
  return last && finishedBy(last, scope.ctx.principal, token) ? last : null;
}

function alreadyFinishedRefusal(row: IssueRow, fence: number): DomainError {
  return new DomainError(
    "STALE_CLAIM",
    `your claim on ${row.identifier} (fence ${fence}) already finished it: it is ${row.status}`,
    row.status === "review"
      ? "Nothing is left for you on it: it waits for its reviewer's agent. Call next_issue for other work."
      : "Nothing is left for you on it. Call next_issue for other work.",
    { identifier: row.identifier, alreadyFinished: true, status: row.status, currentFence: row.fence },
  );
}

/** Whose session may write without its token: heartbeat, checkpoint and release say `session`; finishing needs the token. */
export type Proof = "token" | "token-or-session";

/**
 * A fenced write must present the live lease's token, or, where `proof` allows, come from the
 * session holding it. Anything else is refused: STALE_CLAIM for a lease that is not live or not
 * the caller's key's, CLAIM_MISMATCH for another session of the caller's key.
 */
export async function requireLiveToken(scope: WriteScope, row: IssueRow, token: string | undefined, proof: Proof = "token"): Promise<void> {
  const live = isLeaseLive(row, scope.now);
  if (token && live && row.leaseTokenHash && constantTimeEqual(sha256(token), row.leaseTokenHash)) return;
  const principal = scope.ctx.principal;
  const holder = await currentHolder(scope.tx, row, scope.now);
  if (holder && sameSession(holder, principal)) {
    if (!token && proof === "token-or-session") return;
    throw youHoldRefusal(row, holder, token !== undefined);
  }
  if (holder && sameKey(holder, principal)) throw await claimMismatch(scope, row, holder);
  if (!token) {
    throw new DomainError(
      "STALE_CLAIM",
      holder ? `${row.identifier} is held by ${describeHolder(holder)}` : `${row.identifier} needs a live claim for this write`,
      holder
        ? "Only the holder can finish it; wait for release or expiry."
        : "Claim it first (claim_issue), then pass the claimToken you get.",
      { identifier: row.identifier, holder },
    );
  }
  if (!holder) {
    const last = await lastLeaseOf(scope.tx, row);
    if (last && finishedBy(last, principal, token)) throw alreadyFinishedRefusal(row, last.fence);
    if (last && last.endReason === "finished") {
      throw new DomainError(
        "STALE_CLAIM",
        `your claim on ${row.identifier} is no longer live: ${last.who} (${last.runtime}) finished it under a later claim (fence ${last.fence}); it is ${row.status}`,
        "Stop working on it: nothing is left for you there. Call next_issue for other work.",
        { identifier: row.identifier, finishedBy: { who: last.who, runtime: last.runtime, fence: last.fence }, status: row.status, currentFence: row.fence },
      );
    }
  }
  throw new DomainError(
    "STALE_CLAIM",
    holder
      ? `your claim on ${row.identifier} is no longer live: it is held by ${describeHolder(holder)}`
      : `your claim on ${row.identifier} is no longer live (released or expired); nobody holds it now`,
    holder
      ? "Stop working on it; call next_issue for other work."
      : "Claim it again with claim_issue and resume from the checkpoint it returns.",
    { identifier: row.identifier, holder, currentFence: row.fence },
  );
}

/** Ends the issue's live lease (finish or release): the issue becomes dispatchable again unless terminal. */
export async function endLease(scope: WriteScope, row: IssueRow, reason: "released" | "finished"): Promise<void> {
  const leaseId = row.leaseId;
  if (!leaseId) return;
  // One statement (the lease's update as a data-modifying CTE): finishing is on the hot path.
  await scope.tx.execute(
    sql`with ended as (
          update leases set ended_at = ${scope.now.toISOString()}::timestamptz, end_reason = ${reason}
          where id = ${leaseId} and ended_at is null
        )
        update issues set lease_id = null, lease_token_hash = null, lease_expires_at = null where id = ${row.id}`,
  );
}
