import { and, eq, gt, gte, isNotNull } from "drizzle-orm";
import { activity, issues, leases, projects } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import { systemPrincipal, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { inTransaction } from "../issues/store.ts";
import { isLeaseLive } from "../issues/fencing.ts";
import { releaseClaim } from "./lease.ts";
import { orgNotFrozen } from "../orgs/freeze.ts";
import { claimProgress } from "./stall.ts";

/**
 * The stall sweep (decision 062): each live claim that reads stalled (claimProgress) gets one
 * `stalled` entry in its issue's activity per stall (none yet since its last progress), and in
 * a project that chose `release_stalled` it is then released through the holder's own release
 * path (releaseClaim: counted towards quarantine, recorded `released` with why), so the
 * holder's next fenced write is refused STALE_CLAIM. The issue's row is locked and the rule
 * read again under it, so a checkpoint that lands meanwhile wins.
 */
export async function stallSweep(services: Services, options: { limit?: number } = {}): Promise<{ stalled: number; released: number }> {
  const now = services.clock.now();
  const live = await services.db
    .select({ issueId: issues.id, orgId: issues.orgId, leaseId: issues.leaseId })
    .from(issues)
    // Every live lease, by when it may lapse (issues_lease_check_at_idx; the expiry is no index's, decision 097).
    // A frozen org's claims wait for the move (decision 110).
    .where(and(isNotNull(issues.leaseCheckAt), isNotNull(issues.leaseId), gt(issues.leaseExpiresAt, now), orgNotFrozen(issues.orgId)))
    .orderBy(issues.leaseCheckAt)
    .limit(options.limit ?? 2000);
  const progress = await claimProgress(services, live.map((l) => l.issueId));
  let stalled = 0;
  let released = 0;
  for (const claim of live) {
    if (!progress.get(claim.issueId)?.stalled) continue;
    const ctx = withPrincipal(services, systemPrincipal(claim.orgId));
    const outcome = await inTransaction(ctx, async (scope) => {
      const [row] = await scope.tx.select().from(issues).where(eq(issues.id, claim.issueId)).for("update", { skipLocked: true });
      if (!row || row.leaseId !== claim.leaseId || !isLeaseLive(row, scope.now)) return null;
      const progressNow = (await claimProgress({ db: scope.tx, clock: ctx.clock }, [row.id])).get(row.id);
      if (!progressNow?.stalled) return null;
      const [project] = await scope.tx
        .select({ releaseStalled: projects.releaseStalled, stallMinutes: projects.stallMinutes })
        .from(projects)
        .where(eq(projects.id, row.projectId));
      const [lease] = await scope.tx.select({ runtime: leases.runtime }).from(leases).where(eq(leases.id, row.leaseId!));
      const [marked] = await scope.tx
        .select({ id: activity.id })
        .from(activity)
        .where(and(eq(activity.issueId, row.id), eq(activity.kind, "stalled"), gte(activity.createdAt, new Date(progressNow.lastProgressAt))))
        .limit(1);
      const why = { fence: row.fence, runtime: lease?.runtime ?? null, lastProgressAt: progressNow.lastProgressAt, stallMinutes: project!.stallMinutes };
      if (!marked) await recordActivity(scope, { issueId: row.id, kind: "stalled", facts: why });
      if (!project!.releaseStalled) return marked ? null : ("stalled" as const);
      await releaseClaim(scope, row, { facts: { stalled: true, holderRuntime: why.runtime, lastProgressAt: why.lastProgressAt, stallMinutes: why.stallMinutes } });
      return "released" as const;
    });
    if (outcome === "stalled") stalled++;
    if (outcome === "released") released++;
  }
  return { stalled, released };
}
