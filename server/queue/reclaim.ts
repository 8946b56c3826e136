import { and, eq, isNull, lte, sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import { issues, leases } from "../../db/schema/index.ts";
import { systemPrincipal, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { noticeAfterCommit } from "../events/index.ts";
import { inTransaction, type WriteScope } from "../issues/store.ts";
import { orgNotFrozen } from "../orgs/freeze.ts";
import { OUTBOX_CHANNEL } from "../outbox/index.ts";

/** Ends an expired lease once and records the reclaim (retasc_record_expiry); a claim taking the issue meanwhile records it instead. */
async function recordExpiry(scope: WriteScope, leaseId: string, issueId: string): Promise<boolean> {
  const [row] = await query<{ recorded: boolean }>(
    scope.tx,
    sql`select retasc_record_expiry(${leaseId}::text, ${issueId}::text, ${scope.ctx.principal.orgId}::text,
      ${scope.now.toISOString()}::timestamptz, 'sweep') as recorded`,
  );
  if (row!.recorded) noticeAfterCommit(scope.tx, [{ channel: OUTBOX_CHANNEL, payload: "" }]);
  return row!.recorded;
}

/**
 * Records leases that expired without a release: ends them, logs the reclaim and notifies.
 * Correctness never waits for this (an expired lease is already not live); it makes the
 * reclaim visible within a sweep interval.
 */
export async function reclaimSweep(services: Services, options: { limit?: number } = {}): Promise<{ reclaimed: number }> {
  const now = services.clock.now();
  const expired = await services.db
    .select({ id: leases.id, orgId: leases.orgId, issueId: leases.issueId })
    .from(leases)
    // By check_at (leases_unrecorded_check_idx; never after the expiry), then the expiry itself (decision 097).
    // A frozen org's leases wait for the move (decision 110): reclaimed on the stack it moved to.
    .where(and(isNull(leases.endedAt), isNull(leases.reclaimRecordedAt), lte(leases.checkAt, now), lte(leases.expiresAt, now), orgNotFrozen(leases.orgId)))
    .orderBy(leases.checkAt)
    .limit(options.limit ?? 500);
  let reclaimed = 0;
  for (const lease of expired) {
    const ctx = withPrincipal(services, systemPrincipal(lease.orgId));
    const done = await inTransaction(ctx, async (scope) => {
      const [row] = await scope.tx
        .select()
        .from(issues)
        .where(eq(issues.id, lease.issueId))
        .for("update", { skipLocked: true });
      // A claim in progress holds the row: it will record this expiry itself.
      if (!row) return false;
      if (row.leaseId === lease.id && row.leaseExpiresAt && row.leaseExpiresAt.getTime() > scope.now.getTime()) return false;
      const recorded = await recordExpiry(scope, lease.id, lease.issueId);
      if (recorded && row.leaseId === lease.id) {
        await scope.tx
          .update(issues)
          .set({ leaseId: null, leaseTokenHash: null, leaseExpiresAt: null })
          .where(eq(issues.id, row.id));
        await ctx.events.publish(scope.tx, { orgId: lease.orgId, kind: "claim.reclaimed", issueId: row.id, identifier: row.identifier });
      }
      return recorded;
    });
    if (done) reclaimed++;
  }
  return { reclaimed };
}
