import { desc, eq, sql } from "drizzle-orm";
import { leases, user } from "../../db/schema/index.ts";
import type { Db } from "../../db/client.ts";
import { constantTimeEqual, sha256 } from "../crypto/index.ts";
import { DomainError } from "../errors.ts";
import type { Principal } from "../context.ts";
import type { IssueRow, WriteScope } from "./store.ts";
import { isLeaseLive } from "./views.ts";

/** Who holds an issue right now, for refusals that must name the holder. */
export async function currentHolder(tx: Db, row: IssueRow, now: Date) {
  if (!isLeaseLive(row, now)) return null;
  const rows = await tx
    .select({
      userId: leases.userId,
      runtime: leases.runtime,
      keyId: leases.keyId,
      fence: leases.fence,
      expiresAt: leases.expiresAt,
      email: user.email,
      name: user.name,
    })
    .from(leases)
    .leftJoin(user, eq(user.id, leases.userId))
    .where(eq(leases.id, row.leaseId!));
  const holder = rows[0];
  if (!holder) return null;
  return { ...holder, expiresAt: holder.expiresAt.toISOString() };
}
export type Holder = NonNullable<Awaited<ReturnType<typeof currentHolder>>>;

export const describeHolder = (h: Holder) => `${h.name ?? h.email ?? h.userId} (${h.runtime}) until ${h.expiresAt}`;

/**
 * Is the caller the holder: the key that claimed, or the same person on the same runtime (an
 * agent restarted with another key)? Such a caller may get its lease back with claim_issue.
 */
type Who = Pick<Holder, "keyId" | "userId" | "runtime">;
export function heldByCaller<T extends Who>(holder: T | null, principal: Principal): holder is T {
  if (!holder) return false;
  if (holder.keyId !== null && holder.keyId === principal.keyId) return true;
  return principal.userId !== null && holder.userId === principal.userId && holder.runtime === principal.runtime;
}

/** How a holder who lost its token gets it back. */
export const recoverHint = (identifier: string) =>
  `Lost the claimToken? claim_issue {identifier:"${identifier}"} gives you this same lease back (rebound:true, same fence) with a new claimToken; the old one stops working.`;

/** The holder sent no token or a wrong one (another issue's, an old one): it still holds the issue and is told so. */
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
 * The issue's last lease, when a finish (done, review, cancel) ended it and the caller held it:
 * a finish retried after it succeeded, or a late write after a handoff to review. Read only on
 * refusal paths.
 */
export async function finishedByCaller(scope: WriteScope, row: IssueRow) {
  const [last] = await scope.tx
    .select({ fence: leases.fence, keyId: leases.keyId, userId: leases.userId, runtime: leases.runtime, endReason: leases.endReason })
    .from(leases)
    .where(eq(leases.issueId, row.id))
    .orderBy(desc(leases.fence))
    .limit(1);
  return last && last.endReason === "finished" && heldByCaller(last, scope.ctx.principal) ? last : null;
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

/**
 * Fencing: a write that presents a claim token must present the live one. A released,
 * expired or superseded token is refused with STALE_CLAIM naming the current holder.
 */
export async function requireLiveToken(scope: WriteScope, row: IssueRow, token: string | undefined): Promise<void> {
  const live = isLeaseLive(row, scope.now);
  if (token && live && row.leaseTokenHash && constantTimeEqual(sha256(token), row.leaseTokenHash)) return;
  const holder = await currentHolder(scope.tx, row, scope.now);
  // A wrong token is taken for the holder's own only from the same key: another key of the same
  // person and runtime sending one is more likely a superseded agent, which must stop.
  if (heldByCaller(holder, scope.ctx.principal) && (!token || holder.keyId === scope.ctx.principal.keyId)) {
    throw youHoldRefusal(row, holder, token !== undefined);
  }
  if (token && !holder) {
    const finished = await finishedByCaller(scope, row);
    if (finished) throw alreadyFinishedRefusal(row, finished.fence);
  }
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
