import { and, eq, lte, sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import { issues } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import { systemPrincipal, type Ctx, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { rankingColumns, reviewClockOf } from "../issues/levels.ts";
import { inTransaction } from "../issues/store.ts";
import { orgNotFrozen } from "../orgs/freeze.ts";
import { lockOrgGraph, rerank } from "../issues/ranking.ts";

/**
 * Time moves issues across deadline thresholds (75% warning, 90% breaching, past due), and a
 * review across its age's (decision 073). Each issue stores when that next happens; this
 * re-ranks the ones whose moment has come.
 */
export async function slaSweepOrg(ctx: Ctx, orgId: string): Promise<number> {
  const system = withPrincipal(ctx, systemPrincipal(orgId));
  return inTransaction(system, async (scope) => {
    const { tx, now } = scope;
    await lockOrgGraph(tx, orgId);
    const due = await tx
      .select()
      .from(issues)
      .where(and(eq(issues.orgId, orgId), lte(issues.slaNextAt, now)))
      .for("update");
    const moved: string[] = [];
    for (const row of due) {
      // The deadline's state, and the level it and a review's age set (decision 073).
      const { ownLevel, slaState, slaNextAt } = rankingColumns(row.priority, row.dueAt, row.dueSetAt ?? row.createdAt, false, now, reviewClockOf(row));
      await tx
        .update(issues)
        .set({ ownLevel, slaState, slaNextAt })
        .where(eq(issues.id, row.id));
      if (slaState !== row.slaState) {
        await recordActivity(scope, {
          issueId: row.id,
          kind: "sla_changed",
          facts: { from: row.slaState, to: slaState, ownLevel },
        });
        await system.events.publish(tx, { orgId, kind: "issue.sla", issueId: row.id, identifier: row.identifier, slaState });
      }
      if (ownLevel !== row.ownLevel) moved.push(row.id);
    }
    if (moved.length > 0) await rerank(tx, moved);
    return due.length;
  });
}

/** The SLA sweep job: every org with an issue whose deadline state time has come. */
export async function slaSweep(services: Services): Promise<{ changed: number }> {
  const now = services.clock.now();
  const orgs = await query<{ org_id: string }>(
    services.db,
    // A frozen org waits for the move (decision 110): swept on the stack it moved to.
    sql`select distinct org_id from issues where sla_next_at <= ${now.toISOString()}::timestamptz and ${orgNotFrozen(sql`issues.org_id`)}`,
  );
  let changed = 0;
  for (const { org_id } of orgs) {
    changed += await slaSweepOrg(withPrincipal(services, systemPrincipal(org_id)), org_id);
  }
  return { changed };
}

