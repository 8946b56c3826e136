import { and, eq, gt, sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import { issues, leases, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { scopeOf } from "./dispatch.ts";
import { inScope, reachable } from "../orgs/scope.ts";
import { queueForecast } from "./forecast.ts";
import { gatesDependents, isOpen } from "../../db/schema/dispatch.ts";
import { falseDoneRate } from "../analytics/false-done.ts";

/**
 * The fleet in one call: counts by status, ready work, deadline pressure, blocked-on, live claims,
 * the drain forecast, the false-done rate of the last 30 days.
 */
export async function queueStatus(ctx: Ctx) {
  const now = ctx.clock.now();
  const db = ctx.db;
  const scope = scopeOf(ctx);
  const [byStatus, sla, blocked, live, forecast, falseDone] = await Promise.all([
    query<{ status: string; n: number }>(db, sql`select i.status, count(*)::int as n from issues i where ${scope} group by i.status`),
    query<{ sla_state: string; n: number }>(
      db,
      sql`select i.sla_state, count(*)::int as n from issues i where ${scope} and ${isOpen(sql`i.status`)} and i.sla_state <> 'none' group by i.sla_state`,
    ),
    query<{ identifier: string; blocker: string; blocker_status: string; blocker_verification: string | null }>(
      db,
      sql`select i.identifier, b.identifier as blocker, b.status as blocker_status, b.verification as blocker_verification
          from issues i join relations r on r.target_id = i.id and r.type = 'blocks' join issues b on b.id = r.source_id
          where ${scope} and ${inScope(ctx.principal, sql`b.project_id`)} and i.open_blocker_count > 0 and ${isOpen(sql`i.status`)} and ${gatesDependents(sql`b.status`, sql`b.verification`)}
          order by i.number limit 200`,
    ),
    db
      .select({
        identifier: issues.identifier,
        status: issues.status,
        expiresAt: leases.expiresAt,
        claimedAt: leases.claimedAt,
        heartbeatAt: leases.heartbeatAt,
        runtime: leases.runtime,
        userId: leases.userId,
        email: user.email,
        fence: leases.fence,
      })
      .from(issues)
      .innerJoin(leases, eq(leases.id, issues.leaseId))
      .leftJoin(user, eq(user.id, leases.userId))
      .where(
        and(
          reachable(ctx.principal, issues),
          ctx.principal.projectId ? eq(issues.projectId, ctx.principal.projectId) : undefined,
          gt(issues.leaseExpiresAt, now),
        ),
      )
      .orderBy(leases.expiresAt),
    queueForecast(ctx, now),
    falseDoneRate(ctx, now),
  ]);
  const blockedOn = new Map<string, { identifier: string; status: string }[]>();
  for (const b of blocked) {
    const list = blockedOn.get(b.identifier) ?? [];
    list.push({ identifier: b.blocker, status: b.blocker_status, ...(b.blocker_verification === "pending" ? { verification: "pending" } : {}) });
    blockedOn.set(b.identifier, list);
  }
  return {
    counts: Object.fromEntries(byStatus.map((r) => [r.status, Number(r.n)])),
    ready: forecast.ready,
    deadlinePressure: Object.fromEntries(sla.map((r) => [r.sla_state, Number(r.n)])),
    blockedOn: [...blockedOn].map(([identifier, blockers]) => ({ identifier, blockers })),
    liveClaims: live.map((l) => ({
      identifier: l.identifier,
      status: l.status,
      runtime: l.runtime,
      userId: l.userId,
      email: l.email,
      fence: l.fence,
      claimedAt: l.claimedAt.toISOString(),
      heartbeatAt: l.heartbeatAt.toISOString(),
      expiresAt: l.expiresAt.toISOString(),
    })),
    forecast,
    falseDone: falseDone.rows,
  };
}
