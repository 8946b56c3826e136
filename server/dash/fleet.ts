import { and, desc, eq, inArray, isNotNull, sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import { activity, agentKeys, checkpoints, issues, leases, user } from "../../db/schema/index.ts";
import { activityDetail } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { applyDueSla, queueStatus } from "../queue/index.ts";
import { claimProgress } from "../queue/stall.ts";
import { quarantinedIssues } from "../issues/quarantine.ts";
import { staleVerifications } from "../verification/stale.ts";
import { fleetCharts } from "./charts.ts";
import { sessionLabel, type RenewedBy } from "./lease-session.ts";
import type { ChartRange } from "../../constants/chart-ranges.ts";
import { isOpen } from "../../db/schema/dispatch.ts";
import { inScope, reachable } from "../orgs/scope.ts";

/**
 * The fleet view's read model: every claim with its holder (runtime, human, key), lease
 * time left, last heartbeat and latest checkpoint; the recent moves of work between
 * agents (claims, handoffs to another runtime, reclaims, releases, finishes) from the
 * activity log; the counts a person watches; and the charts of the last day or week (charts.ts). Leases that have run out but that the
 * reclaim sweep has not recorded yet are listed as expired, not hidden. What waits on a person is
 * marked: stalled claims, finishes whose verification went stale, quarantined issues.
 */
const MOVES = ["claimed", "reclaimed", "released", "force_released", "finished"] as const;
const RECENT_MOVES = 25;

export async function fleetSnapshot(ctx: Ctx, range: ChartRange = "day") {
  const { db } = ctx;
  const orgId = ctx.principal.orgId;
  const now = ctx.clock.now();
  const cipher = await ctx.keyring.forOrg(db, orgId);
  await applyDueSla(ctx, now);

  const [status, charts, blockedRows, claimRows, moveRows, stale, quarantined] = await Promise.all([
    queueStatus(ctx),
    fleetCharts(ctx, now, range),
    query<{ n: number }>(
      db,
      sql`select count(*)::int as n from issues i where i.org_id = ${orgId} and ${inScope(ctx.principal, sql`i.project_id`)} and ${isOpen(sql`i.status`)}
          and (i.status = 'blocked' or i.open_blocker_count > 0)`,
    ),
    db
      .select({
        issueId: issues.id,
        identifier: issues.identifier,
        titleEnc: issues.titleEnc,
        status: issues.status,
        fence: leases.fence,
        runtime: leases.runtime,
        userId: leases.userId,
        email: user.email,
        name: user.name,
        keyPrefix: agentKeys.prefix,
        claimedAt: leases.claimedAt,
        heartbeatAt: leases.heartbeatAt,
        expiresAt: leases.expiresAt,
        sessionId: leases.sessionId,
        renewedBy: leases.renewedBy,
      })
      .from(issues)
      .innerJoin(leases, eq(leases.id, issues.leaseId))
      .leftJoin(user, eq(user.id, leases.userId))
      .leftJoin(agentKeys, eq(agentKeys.id, leases.keyId))
      .where(and(reachable(ctx.principal, issues), isNotNull(issues.leaseId)))
      .orderBy(leases.claimedAt, issues.identifier),
    db
      .select({
        id: activity.id,
        kind: activity.kind,
        issueId: activity.issueId,
        identifier: issues.identifier,
        runtime: activity.runtime,
        email: user.email,
        detailEnc: activity.detailEnc,
        facts: activity.facts,
        createdAt: activity.createdAt,
      })
      .from(activity)
      .innerJoin(issues, eq(issues.id, activity.issueId))
      .leftJoin(user, eq(user.id, activity.actorId))
      .where(and(eq(activity.orgId, orgId), inScope(ctx.principal, issues.projectId), inArray(activity.kind, [...MOVES])))
      .orderBy(desc(activity.id))
      .limit(RECENT_MOVES),
    staleVerifications(ctx),
    quarantinedIssues(ctx),
  ]);

  // Each move's detail is decrypted once: the fences feed the lease lookup, the rest the list.
  const moveEntries = moveRows.map((m) => ({ ...m, detail: activityDetail(cipher, m) }));
  const claimIds = claimRows.map((c) => c.issueId);
  const [latestCheckpoints, previousLeases, progress] = await Promise.all([
    claimIds.length === 0
      ? []
      : db
          .selectDistinctOn([checkpoints.issueId])
          .from(checkpoints)
          .where(inArray(checkpoints.issueId, claimIds))
          .orderBy(checkpoints.issueId, desc(checkpoints.createdAt), desc(checkpoints.id)),
    previousHolders(ctx, [
      ...claimRows.map((c) => ({ issueId: c.issueId, fence: c.fence })),
      ...moveEntries.flatMap((m) => {
        if (m.kind !== "claimed") return [];
        const fence = Number(m.detail.fence ?? 0);
        return fence > 1 ? [{ issueId: m.issueId!, fence }] : [];
      }),
    ]),
    claimProgress(ctx, claimIds),
  ]);
  const checkpointOf = new Map(latestCheckpoints.map((c) => [c.issueId, c]));

  const claims = claimRows.map((c) => {
    const checkpoint = checkpointOf.get(c.issueId);
    const previous = previousLeases.get(`${c.issueId}#${c.fence}`) ?? null;
    return {
      identifier: c.identifier,
      title: cipher.decrypt(c.titleEnc) ?? "",
      status: c.status,
      fence: c.fence,
      runtime: c.runtime,
      human: c.name || c.email || c.userId,
      humanEmail: c.email,
      keyPrefix: c.keyPrefix,
      session: sessionLabel(c.sessionId),
      renewedBy: c.renewedBy as RenewedBy,
      claimedAt: c.claimedAt.toISOString(),
      heartbeatAt: c.heartbeatAt.toISOString(),
      expiresAt: c.expiresAt.toISOString(),
      expired: c.expiresAt.getTime() <= now.getTime(),
      /** Kept alive with no checkpoint, comment or write for the project's stall window (check_claim says the same). */
      stalled: progress.get(c.issueId)?.stalled ?? false,
      lastProgressAt: progress.get(c.issueId)?.lastProgressAt ?? null,
      /** The runtime that held it before, when this claim took it over from another runtime. */
      handedOffFrom: previous && previous.runtime !== c.runtime ? previous.runtime : null,
      checkpoint: checkpoint
        ? {
            at: checkpoint.createdAt.toISOString(),
            runtime: checkpoint.runtime,
            done: cipher.decrypt(checkpoint.doneEnc),
            next: cipher.decrypt(checkpoint.nextEnc),
            note: cipher.decrypt(checkpoint.noteEnc),
          }
        : null,
    };
  });

  const moves = moveEntries.map((m) => {
    const { detail } = m;
    const base = { id: m.id, identifier: m.identifier, at: m.createdAt.toISOString(), runtime: m.runtime, who: m.email };
    if (m.kind === "claimed") {
      const previous = previousLeases.get(`${m.issueId}#${Number(detail.fence ?? 0)}`);
      if (previous && previous.runtime !== m.runtime) {
        return { ...base, kind: "handoff" as const, fromRuntime: previous.runtime };
      }
      return { ...base, kind: "claimed" as const, fromRuntime: null };
    }
    if (m.kind === "reclaimed" || m.kind === "force_released") {
      // The runtime that lost the claim, not the actor (the sweep, or the person releasing it).
      const lost = String((m.kind === "reclaimed" ? detail.runtime : detail.holderRuntime) ?? "");
      return { ...base, kind: m.kind, fromRuntime: lost || null };
    }
    // A finish into review is a handoff to the reviewer, not the end of the work.
    if (m.kind === "finished" && detail.to === "review") return { ...base, kind: "review" as const, fromRuntime: null };
    // A stalled claim the project releases (decision 062): the runtime that lost it, not Retasc.
    if (m.kind === "released" && detail.stalled === true) return { ...base, kind: "stall_released" as const, fromRuntime: String(detail.holderRuntime ?? "") || null };
    return { ...base, kind: m.kind as "released" | "finished", fromRuntime: null };
  });

  const counts = status.counts as Record<string, number | undefined>;
  const pressure = status.deadlinePressure as Record<string, number | undefined>;
  return {
    now: now.toISOString(),
    counts: {
      ready: status.ready,
      blocked: Number(blockedRows[0]?.n ?? 0),
      review: counts.review ?? 0,
      breaching: (pressure.breaching ?? 0) + (pressure.breached ?? 0),
      held: claims.filter((c) => !c.expired).length,
    },
    claims,
    /** What waits on a person (decision 062): finishes CI left pending past their window, and quarantined issues; stalled claims are marked in `claims`. */
    attention: { stale, quarantined },
    moves,
    charts,
    forecast: status.forecast,
    falseDone: status.falseDone,
  };
}
export type FleetSnapshot = Awaited<ReturnType<typeof fleetSnapshot>>;
export type FleetClaim = FleetSnapshot["claims"][number];
export type FleetMove = FleetSnapshot["moves"][number];

/** For each (issue, fence): the lease just before it, keyed `issueId#fence`. */
async function previousHolders(ctx: Ctx, claims: { issueId: string; fence: number }[]) {
  const wanted = claims.filter((c) => c.fence > 1);
  const found = new Map<string, { runtime: string; userId: string }>();
  if (wanted.length === 0) return found;
  const rows = await ctx.db
    .select({ issueId: leases.issueId, fence: leases.fence, runtime: leases.runtime, userId: leases.userId })
    .from(leases)
    .where(
      and(
        eq(leases.orgId, ctx.principal.orgId),
        sql`(${leases.issueId}, ${leases.fence}) in (${sql.join(
          wanted.map((c) => sql`(${c.issueId}, ${c.fence - 1})`),
          sql`, `,
        )})`,
      ),
    );
  for (const r of rows) found.set(`${r.issueId}#${r.fence + 1}`, { runtime: r.runtime, userId: r.userId });
  return found;
}
