import { and, eq, isNull, lte } from "drizzle-orm";
import { issues, leases } from "../../db/schema/index.ts";
import { systemPrincipal, withPrincipal, type Services } from "../context.ts";
import { inTransaction } from "../issues/store.ts";
import { recordExpiry } from "./index.ts";

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
    .where(and(isNull(leases.endedAt), isNull(leases.reclaimRecordedAt), lte(leases.expiresAt, now)))
    .orderBy(leases.expiresAt)
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
      const recorded = await recordExpiry(scope, lease.id, lease.issueId, "sweep");
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
