import { and, asc, eq, gte, sql } from "drizzle-orm";
import { activity, issues, projects } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import { systemPrincipal, type Ctx, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { inTransaction } from "../issues/store.ts";
import { pastWindow, verificationNow } from "../issues/verification-state.ts";
import { reachable } from "../orgs/scope.ts";
import { orgNotFrozen } from "../orgs/freeze.ts";
import { enqueue } from "../outbox/index.ts";

/**
 * Stale finishes (issue 35, decision 062): the Fleet's list and the sweep that tells of each once.
 * The rule itself is server/issues/verification-state.ts.
 */

const FLEET_LIMIT = 50;

/** The Fleet's list: finishes of the viewer's projects waiting on CI past their window, oldest first. */
export async function staleVerifications(ctx: Ctx) {
  const now = ctx.clock.now();
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const rows = await ctx.db
    .select({
      identifier: issues.identifier,
      titleEnc: issues.titleEnc,
      verification: issues.verification,
      verificationAt: issues.verificationAt,
      verificationStaleAt: issues.verificationStaleAt,
      evidenceCommit: issues.evidenceCommit,
      evidenceBranch: issues.evidenceBranch,
      evidencePr: issues.evidencePr,
      windowMinutes: projects.verificationWindowMinutes,
    })
    .from(issues)
    .innerJoin(projects, eq(projects.id, issues.projectId))
    .where(and(reachable(ctx.principal, issues), pastWindow(now)))
    .orderBy(asc(issues.verificationStaleAt), asc(issues.identifier))
    .limit(FLEET_LIMIT);
  return rows
    .filter((r) => verificationNow(r, now) === "stale")
    .map((r) => ({
      identifier: r.identifier,
      title: cipher.decrypt(r.titleEnc) ?? "",
      verification: "stale" as const,
      finishedAt: (r.verificationAt ?? r.verificationStaleAt!).toISOString(),
      staleSince: r.verificationStaleAt!.toISOString(),
      windowMinutes: r.windowMinutes,
      evidence: { commit: r.evidenceCommit, branch: r.evidenceBranch, pr: r.evidencePr },
    }));
}
export type StaleVerification = Awaited<ReturnType<typeof staleVerifications>>[number];

/**
 * Tells of each finish that went stale, once: an activity entry `verification_stale` and one
 * `verification_stale` notification (the author and the finisher's human, routed and muted like
 * every kind). Once per finish: a finish already told of (an entry since its verification began)
 * is passed over; a later finish that goes stale again is told of again. The issue's row is
 * locked while it is read and told of, so two runs never both tell.
 */
export async function staleVerificationSweep(services: Services, options: { limit?: number } = {}): Promise<{ stale: number }> {
  const now = services.clock.now();
  const candidates = await services.db
    .select({ id: issues.id, orgId: issues.orgId })
    .from(issues)
    .where(
      and(
        pastWindow(now),
        // A frozen org's finishes wait for the move (decision 110).
        orgNotFrozen(issues.orgId),
        sql`not exists (select 1 from ${activity} a where a.issue_id = ${issues.id} and a.kind = 'verification_stale' and a.created_at >= coalesce(${issues.verificationAt}, ${issues.updatedAt}))`,
      ),
    )
    .orderBy(asc(issues.verificationStaleAt))
    .limit(options.limit ?? 500);
  let told = 0;
  for (const candidate of candidates) {
    const ctx = withPrincipal(services, systemPrincipal(candidate.orgId));
    const done = await inTransaction(ctx, async (scope) => {
      const [row] = await scope.tx.select().from(issues).where(eq(issues.id, candidate.id)).for("update", { skipLocked: true });
      if (!row || row.status !== "done" || verificationNow(row, scope.now) !== "stale") return false;
      const since = row.verificationAt ?? row.updatedAt;
      const [already] = await scope.tx
        .select({ id: activity.id })
        .from(activity)
        .where(and(eq(activity.issueId, row.id), eq(activity.kind, "verification_stale"), gte(activity.createdAt, since)))
        .limit(1);
      if (already) return false;
      const [project] = await scope.tx.select({ windowMinutes: projects.verificationWindowMinutes }).from(projects).where(eq(projects.id, row.projectId));
      await recordActivity(scope, {
        issueId: row.id,
        kind: "verification_stale",
        facts: { verification: "stale", since: row.verificationStaleAt!.toISOString(), windowMinutes: project?.windowMinutes ?? null, commit: row.evidenceCommit },
      });
      await enqueue(scope.tx, "notify.issue_event", { orgId: row.orgId, issueId: row.id, kind: "verification_stale", actorId: null });
      await ctx.events.publish(scope.tx, { orgId: row.orgId, kind: "issue.updated", issueId: row.id, identifier: row.identifier, status: "done" });
      return true;
    });
    if (done) told++;
  }
  return { stale: told };
}
