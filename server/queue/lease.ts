import type { z } from "zod";
import { eq, sql } from "drizzle-orm";
import { issues, leases } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import { invalidInput } from "../errors.ts";
import type { Ctx } from "../context.ts";
import { currentHolder, endLease, lastLeaseOf, recoverHint, requireLiveToken, sameKey, sameSession } from "../issues/fencing.ts";
import { findIssue, latestCheckpoint } from "../issues/lookups.ts";
import { inTransaction, type WriteScope } from "../issues/store.ts";
import type { IssueRow } from "../issues/types.ts";
import { countAbandonedClaim } from "../issues/quarantine.ts";
import { checkpointView, unheldText } from "../issues/views.ts";
import { NOTE_FIELDS, writeCheckpoint } from "../issues/checkpoints.ts";
import { checkClaimInput, checkpointInput, heartbeatInput, releaseIssueInput } from "./schemas.ts";
import { meter } from "../usage/meter.ts";
import { claimProgress } from "./stall.ts";
import { heartbeatHeld } from "./heartbeat-held.ts";
import { logBeat } from "./beat-log.ts";

/** What a holder does with a lease: check it, renew it (heartbeat, checkpoint), hand it back (release). */

/**
 * Where a claim stands from the caller's side (decision 036): `held` by this session, held by
 * `other_session` (another session of this key, or anyone else), `unknown_session` (this key holds
 * it but the caller sent no session id, so nothing tells whether it is the caller's), `expired`
 * (its last lease lapsed) or `unclaimed`. A look only: it renews nothing.
 */
export const claimStatuses = ["held", "unclaimed", "expired", "other_session", "unknown_session"] as const;

export async function checkClaim(ctx: Ctx, raw: z.input<typeof checkClaimInput>) {
  const { identifier } = checkClaimInput.parse(raw);
  const now = ctx.clock.now();
  const row = await findIssue(ctx.db, ctx.principal, identifier);
  const holder = await currentHolder(ctx.db, row, now);
  const youHold = sameSession(holder, ctx.principal);
  const status: (typeof claimStatuses)[number] = holder
    ? youHold
      ? "held"
      : sameKey(holder, ctx.principal) && !ctx.principal.sessionId
        ? "unknown_session"
        : "other_session"
    : row.leaseId !== null || (await lastLeaseOf(ctx.db, row))?.endReason === "expired"
      ? "expired"
      : "unclaimed";
  const progress = holder ? (await claimProgress(ctx, [row.id])).get(row.id) : undefined;
  return {
    identifier,
    status,
    issueStatus: row.status,
    held: holder !== null,
    ...(progress ? { stalled: progress.stalled, lastProgressAt: progress.lastProgressAt } : {}),
    youHold,
    yourKey: sameKey(holder, ctx.principal),
    renewedByYourCalls: youHold,
    lastRenewedAt: holder?.renewedAt ?? null,
    holder,
    expiresAt: holder?.expiresAt ?? null,
    fence: row.fence,
    ...(youHold ? { recover: recoverHint(identifier) } : {}),
  };
}

/**
 * Renews the live lease for another TTL from now (heartbeat, checkpoint, a rebind). A rebind also
 * gives the lease a new token and moves it to the calling session and key.
 */
export async function renew(scope: WriteScope, row: IssueRow, rebind?: { tokenHash: string }) {
  const expiresAt = new Date(scope.now.getTime() + scope.ctx.config.leaseTtlMs);
  const p = scope.ctx.principal;
  await scope.tx.update(issues).set({ leaseExpiresAt: expiresAt, ...(rebind ? { leaseTokenHash: rebind.tokenHash } : {}) }).where(eq(issues.id, row.id));
  await scope.tx
    .update(leases)
    .set({
      expiresAt,
      // The reclaim sweep's check time, kept by the renewals themselves (decision 109).
      checkAt: sql`retasc_renewed_check_at(${leases.checkAt}, ${expiresAt.toISOString()}::timestamptz)`,
      heartbeatAt: scope.now,
      renewedBy: "heartbeat",
      ...(rebind ? { tokenHash: rebind.tokenHash, sessionId: p.sessionId ?? null, keyId: p.keyId, runtime: p.runtime ?? "unknown", ...(p.userId ? { userId: p.userId } : {}) } : {}),
    })
    .where(eq(leases.id, row.leaseId!));
  return expiresAt;
}

/**
 * Renews the lease explicitly (the watchdog proxy, long silences); the holding session may omit the
 * token. With the live token it is one statement (heartbeat-held.ts); otherwise the general path.
 */
export async function heartbeat(ctx: Ctx, raw: z.input<typeof heartbeatInput>) {
  const input = heartbeatInput.parse(raw);
  return (input.claimToken ? await heartbeatHeld(ctx, input.identifier, input.claimToken) : null) ?? renewByHeartbeat(ctx, input);
}

/** The general path: the lease found by the token or by the holding session, every refusal, the charge settled with the write. */
export async function renewByHeartbeat(ctx: Ctx, input: z.output<typeof heartbeatInput>) {
  return inTransaction(ctx, async (scope) => {
    const row = await findIssue(scope.tx, ctx.principal, input.identifier, { forUpdate: true });
    await requireLiveToken(scope, row, input.claimToken, "token-or-session");
    const expiresAt = await renew(scope, row);
    meter(scope, "heartbeat", "heartbeat", row.id);
    await logBeat(scope.tx, ctx.principal, row, scope.now);
    await ctx.events.publish(scope.tx, { orgId: ctx.principal.orgId, kind: "claim.renewed", issueId: row.id, identifier: row.identifier });
    return { identifier: row.identifier, expiresAt: expiresAt.toISOString(), fence: row.fence };
  });
}

/** Records handoff notes that survive release and reclaim, and renews the lease. */
export async function checkpoint(ctx: Ctx, raw: z.input<typeof checkpointInput>) {
  const input = checkpointInput.parse(raw);
  if (NOTE_FIELDS.every((field) => input[field] === undefined)) {
    throw invalidInput("a checkpoint needs at least one of done, next, gotchas, note or branch", "Say what is done or what comes next; to only renew the lease, call heartbeat.");
  }
  return inTransaction(ctx, async (scope) => {
    const row = await findIssue(scope.tx, ctx.principal, input.identifier, { forUpdate: true });
    await requireLiveToken(scope, row, input.claimToken, "token-or-session");
    await writeCheckpoint(scope, row, input);
    const expiresAt = await renew(scope, row);
    meter(scope, "checkpoint", "work", row.id);
    await recordActivity(scope, {
      issueId: row.id,
      kind: "checkpoint",
      facts: { fence: row.fence },
      detail: { done: input.done, next: input.next, gotchas: input.gotchas, note: input.note },
    });
    await ctx.events.publish(scope.tx, { orgId: ctx.principal.orgId, kind: "claim.checkpoint", issueId: row.id, identifier: row.identifier });
    return {
      identifier: row.identifier,
      expiresAt: expiresAt.toISOString(),
      fence: row.fence,
      checkpoint: checkpointView(scope.cipher, await latestCheckpoint(scope.tx, row.id)),
    };
  });
}

/**
 * A release, whoever asks for it: the holder (release_issue) or the stall sweep for a project
 * that releases stalled claims (decision 062). The claim is counted towards quarantine before
 * the holder's note is written (a release note is not progress, decision 055), the lease ends
 * (the holder's next fenced write is refused STALE_CLAIM), and it is recorded as `released`,
 * with `facts` saying why when it was not the holder. True when this release quarantined it.
 */
export async function releaseClaim(scope: WriteScope, row: IssueRow, why: { note?: string; facts?: Record<string, unknown> }): Promise<boolean> {
  const quarantined = await countAbandonedClaim(scope, row);
  if (why.note) await writeCheckpoint(scope, row, { note: why.note });
  await endLease(scope, row, "released");
  await recordActivity(scope, {
    issueId: row.id,
    kind: "released",
    facts: { fence: row.fence, ...why.facts },
    detail: { note: why.note },
  });
  await scope.ctx.events.publish(scope.tx, { orgId: scope.ctx.principal.orgId, kind: "claim.released", issueId: row.id, identifier: row.identifier });
  return quarantined;
}

/** Returns held work to the pool; the checkpoint stays for the next claimant. */
export async function releaseIssue(ctx: Ctx, raw: z.input<typeof releaseIssueInput>) {
  const input = releaseIssueInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const row = await findIssue(scope.tx, ctx.principal, input.identifier, { forUpdate: true });
    await requireLiveToken(scope, row, input.claimToken, "token-or-session");
    const quarantined = await releaseClaim(scope, row, { note: input.note });
    meter(scope, "release_issue", "plumbing", row.id);
    if (quarantined) {
      const [after] = await scope.tx.select({ reason: issues.quarantineReason }).from(issues).where(eq(issues.id, row.id));
      return {
        identifier: row.identifier,
        released: true,
        status: "blocked" as const,
        held: false as const,
        message: `Released: ${row.identifier} is ${after!.reason}; no agent gets it until a person releases it. Your claimToken is dead.`,
      };
    }
    // Otherwise the status is what the issue is left in: releasing never changes it.
    return {
      identifier: row.identifier,
      released: true,
      status: row.status,
      held: false as const,
      message: `Released: ${row.identifier} is ${unheldText(row)}. Your claimToken is dead.`,
    };
  });
}
