import { and, asc, eq, gte, sql } from "drizzle-orm";
import { checkpoints, comments, issues, verificationReports } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import { projectVerification } from "../issues/evidence.ts";
import { rankingColumns } from "../issues/levels.ts";
import { lockOrgGraph, rerank } from "../issues/ranking.ts";
import { findIssue, latestCheckpoint } from "../issues/lookups.ts";
import { type WriteScope } from "../issues/store.ts";
import type { IssueRow } from "../issues/types.ts";
import { newId } from "../orgs/index.ts";
import { enqueue } from "../outbox/index.ts";
import { leaveRider } from "./riders.ts";
import { failureLines, verdictOf, type CheckReport } from "./verdict.ts";

/** Where a report came from: a connector's webhook, a CI key's attestation, a person on the Dash. */
export type ReportSource = "github" | "gitlab" | "attested" | "person";

export type SettleOutcome = "passed" | "failed" | "pending" | "not_pending";

/** High: the rank a finish CI failed is floored at when it goes back to the queue. */
const HIGH = 2;

/**
 * Records CI results for a finish awaiting verification and settles it when they add up
 * (verdictOf): passed lets its dependents go, failed reopens it. `verdict` overrides the sum:
 * a person passing or failing it by hand. Takes the org's graph lock first (a pass changes
 * dependents' blocker counts, a failure re-ranks), then the issue's row lock.
 */
export async function recordReports(
  scope: WriteScope,
  identifier: string,
  reports: readonly CheckReport[],
  source: ReportSource,
  verdict?: "passed" | "failed",
): Promise<SettleOutcome> {
  const { tx, ctx, now } = scope;
  const orgId = ctx.principal.orgId;
  await lockOrgGraph(tx, orgId);
  const row = await findIssue(tx, ctx.principal, identifier, { forUpdate: true });
  if (row.status !== "done" || row.verification !== "pending") return "not_pending";
  if (reports.length > 0) {
    await tx.insert(verificationReports).values(
      reports.map((r) => ({
        id: newId(),
        orgId,
        issueId: row.id,
        commit: r.commit,
        check: r.check,
        conclusion: r.conclusion,
        url: r.url,
        source,
        actorId: ctx.principal.userId,
        keyId: ctx.principal.keyId,
        createdAt: now,
      })),
    );
  }
  // Only what was reported since this finish counts: an earlier finish's reports are its own.
  const since = await tx
    .select({ check: verificationReports.check, conclusion: verificationReports.conclusion, url: verificationReports.url, commit: verificationReports.commit })
    .from(verificationReports)
    .where(and(eq(verificationReports.issueId, row.id), gte(verificationReports.createdAt, row.verificationAt ?? row.updatedAt)))
    .orderBy(asc(verificationReports.createdAt), asc(verificationReports.id));
  const latest = new Map(since.map((r) => [r.check, r] as const));
  const settings = await projectVerification(tx, row.projectId);
  const outcome = verdict ?? verdictOf(new Map([...latest].map(([check, r]) => [check, r.conclusion])), settings.checks);
  if (outcome === null) return "pending";
  const failing = [...latest.values()].filter((r) => r.conclusion === "failure");
  if (outcome === "passed") await pass(scope, row, source);
  else await fail(scope, row, failing.length > 0 ? failing : [...reports], source);
  return outcome;
}

/** Passed: the finish stops holding its dependents back (its count in theirs ends, as a plain finish's does). */
async function pass(scope: WriteScope, row: IssueRow, source: ReportSource) {
  const { tx, ctx, now } = scope;
  await tx.update(issues).set({ verification: "passed", verificationAt: now, verificationStaleAt: null }).where(eq(issues.id, row.id));
  await tx.execute(sql`update issues set open_blocker_count = open_blocker_count - 1
    where id in (select target_id from relations where source_id = ${row.id} and type = 'blocks')`);
  await recordActivity(scope, { issueId: row.id, kind: "verified", facts: { verification: "passed", source } });
  await ctx.events.publish(tx, { orgId: row.orgId, kind: "issue.updated", issueId: row.id, identifier: row.identifier, status: "done" });
}

/**
 * Failed: back to todo, ranked at least High, its failing checks in a comment and in the
 * checkpoint the next claim reads (as gotchas), the finisher's key told on its next call, and
 * its author and the finisher's human notified. Its dependents never stopped counting it, so
 * they stay blocked.
 */
async function fail(scope: WriteScope, row: IssueRow, failing: readonly CheckReport[], source: ReportSource) {
  const { tx, ctx, now, cipher } = scope;
  const lines = failureLines(failing);
  const priority = row.priority === 0 || row.priority > HIGH ? HIGH : row.priority;
  await tx
    .update(issues)
    .set({
      status: "todo",
      verification: "failed",
      verificationAt: now,
      verificationStaleAt: null,
      priority,
      updatedAt: now,
      ...rankingColumns(priority, row.dueAt, row.dueSetAt ?? row.createdAt, false, now),
    })
    .where(eq(issues.id, row.id));
  await rerank(tx, [row.id]);
  const gotchas = `CI failed the last finish; fix these first:\n${lines}`;
  await tx.insert(comments).values({ id: newId(), orgId: row.orgId, issueId: row.id, authorId: null, keyId: null, runtime: "retasc", bodyEnc: cipher.encrypt(gotchas), createdAt: now });
  const previous = await latestCheckpoint(tx, row.id);
  await tx.insert(checkpoints).values({
    id: newId(),
    orgId: row.orgId,
    issueId: row.id,
    leaseId: null,
    userId: null,
    keyId: null,
    runtime: "retasc",
    doneEnc: previous?.doneEnc ?? null,
    nextEnc: previous?.nextEnc ?? null,
    gotchasEnc: cipher.encrypt(gotchas),
    noteEnc: null,
    branch: previous?.branch ?? null,
    createdAt: previous && previous.createdAt.getTime() >= now.getTime() ? new Date(previous.createdAt.getTime() + 1) : now,
  });
  const checks = failing.map((r) => r.check);
  await recordActivity(scope, { issueId: row.id, kind: "verification_failed", facts: { from: "done", to: "todo", verification: "failed", source, checks } });
  await leaveRider(scope, row, `${row.identifier} failed CI (${checks.join(", ") || "failed by hand"}) and is back in the queue at High or above.`);
  await enqueue(tx, "notify.issue_event", { orgId: row.orgId, issueId: row.id, kind: "verification_failed", actorId: ctx.principal.userId });
  await ctx.events.publish(tx, { orgId: row.orgId, kind: "issue.updated", issueId: row.id, identifier: row.identifier, status: "todo" });
}
