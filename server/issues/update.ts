import { eq, sql } from "drizzle-orm";
import { issues } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, invalidInput } from "../errors.ts";
import { currentHolder, endLease, finishedByCaller, isLeaseLive, lastLeaseOf, requireLiveToken } from "./fencing.ts";
import { checkEvidenceGoesWithFinish, finishEvidence } from "./evidence.ts";
import { checkHandoff, writeCheckpoint } from "./checkpoints.ts";
import { setLabels } from "./labels.ts";
import { indexTerms } from "./similar.ts";
import { branchName, rankingColumns, reviewClockOf, reviewSinceAfter } from "./levels.ts";
import { lockOrgGraph, rankChanges, readRankGraph, rerank, writeRanks, type RankGraph } from "./ranking.ts";
import { alreadyClaimed, personOnly } from "./refusals.ts";
import type { SaveInput } from "./schemas.ts";
import { orgTimeZone, parseDueAt, resolveAssignee } from "./inputs.ts";
import { findIssue, hasBlockEdges, peekStatusAndEdges, validParent } from "./lookups.ts";
import { inOrder, inTransaction, isTerminal, RetryTransaction, type WriteScope } from "./store.ts";
import type { IssueRow } from "./types.ts";
import { checkReviewer, checkTransition, notices } from "./transitions.ts";
import { quarantinedRefusal } from "./quarantine.ts";
import { issueView, issueViewReads, renderIssueView, type ViewReads } from "./views.ts";
import { meter } from "../usage/meter.ts";

/** The issue row, locked, which graph lock the update holds, and the rank graph read beside the row when `ranksAhead`. */
interface Locked {
  row: IssueRow;
  graphLocked: boolean;
  rankGraph: RankGraph | null;
}

/** What an update changes: the row's new values, the fields named in its activity, and whether it ends the lease. */
interface Change {
  patch: Partial<typeof issues.$inferInsert>;
  changed: string[];
  finishLease: "finished" | null;
  from: IssueRow["status"];
  to: IssueRow["status"];
}

/** Priority, deadline, and any status but a close (entering or leaving review moves the review's age floor, decision 073). */
const changesRank = (input: SaveInput) =>
  input.priority !== undefined || input.dueAt !== undefined || (input.status !== undefined && !isTerminal(input.status));

/**
 * A priority or deadline change with no status change: its re-rank is computed before the row is
 * written, from a read sent with the row's locked read, so the row is written once (its own
 * ranking with the rest of the change, returned for the reply) and only its blockers after it.
 * Nothing else the update writes touches the row (no lease ends without a status change).
 */
const ranksAhead = (input: SaveInput) => (input.priority !== undefined || input.dueAt !== undefined) && input.status === undefined;

/** Updates an existing issue (status changes included) under its row lock, and the graph lock when ranking can move. */
export async function updateIssue(ctx: Ctx, input: SaveInput, identifier: string) {
  let forceGraphLock = false;
  return inTransaction(ctx, async (scope) => {
    const locked = await lockForUpdate(scope, input, identifier, forceGraphLock);
    if (!locked) {
      forceGraphLock = true;
      throw new RetryTransaction();
    }
    const { row } = locked;
    if (input.reviewedSimilar) {
      throw invalidInput("reviewedSimilar is for creating an issue", "Omit reviewedSimilar when changing an existing issue; relate it with add_relation.");
    }
    if (input.blockedBy || input.noDependency) {
      throw invalidInput("dependencies of an existing issue change through add_relation / remove_relation", "Call add_relation with type blocked_by.");
    }
    if (isFinishRetry(scope, row, input)) {
      if (await finishedByCaller(scope, row, input.claimToken)) {
        return { ...(await issueView(scope.tx, scope.ctx.principal, scope.cipher, row, scope.now)), alreadyFinished: true as const };
      }
      // An agent repeating a finish that was not its lease's is told who finished it, never a bare ok it would take for its own.
      if (!input.claimToken && scope.ctx.principal.kind === "agent") throw await finishedByAnother(scope, row);
    }
    // Only a person's release takes a quarantined issue out of blocked (decision 055).
    if (row.quarantinedAt && input.status !== undefined && input.status !== row.status) throw quarantinedRefusal(ctx.config, row, "status");
    if (input.claimToken) await requireLiveToken(scope, row, input.claimToken);
    const change = await changeOf(scope, row, input);
    // A call that changes nothing writes nothing and costs nothing; the body is the work tier.
    if (change.changed.length > 0) meter(scope, "save_issue", change.changed.includes("body") ? "work" : "bookkeeping", row.id);
    const written = await write(scope, locked, input, change);
    return record(scope, row, input, change, written);
  });
}

async function finishedByAnother(scope: WriteScope, row: IssueRow): Promise<DomainError> {
  const last = await lastLeaseOf(scope.tx, row);
  const finisher = last?.endReason === "finished" ? `${last.who} (${last.runtime}) finished it under fence ${last.fence}` : "nobody's claim of yours finished it";
  return new DomainError("STALE_CLAIM", `${row.identifier} is already ${row.status}: ${finisher}`, "Nothing is left for you on it. Call next_issue for other work.", {
    identifier: row.identifier,
    status: row.status,
    ...(last?.endReason === "finished" ? { finishedBy: { who: last.who, runtime: last.runtime, fence: last.fence } } : {}),
  });
}

const RETRY_FIELDS = new Set(["identifier", "status", "claimToken", "assignee", "cancelReason", "evidence", "handoff"]);

/**
 * The finish (done, review, cancel) that put the issue where it is, sent again (with its token,
 * now dead, or from the finishing session without it): a retry after success, answered with the
 * finished state only if the caller's lease was the one that finished it.
 */
function isFinishRetry(scope: WriteScope, row: IssueRow, input: SaveInput): boolean {
  return input.status === row.status && (isTerminal(row.status) || row.status === "review") &&
    !isLeaseLive(row, scope.now) && Object.entries(input).every(([field, value]) => value === undefined || RETRY_FIELDS.has(field));
}

/**
 * Locks the issue, and the org's graph first when the update can move ranking: exclusively
 * for a rank change, shared for closing an issue nothing open blocks (every finished claim),
 * which re-ranks only itself. Returns undefined when the transaction must rerun holding the
 * graph lock exclusively.
 */
async function lockForUpdate(scope: WriteScope, input: SaveInput, identifier: string, forceGraphLock: boolean): Promise<Locked | undefined> {
  const { tx } = scope;
  const orgId = scope.ctx.principal.orgId;
  const closing = input.status !== undefined && isTerminal(input.status);
  // The unlocked peek only decides whether closing the issue needs the graph lock (taken before
  // row locks). An issue not found is reported by the locked read below.
  const peek = closing ? await peekStatusAndEdges(tx, orgId, identifier) : null;
  const toTerminal = peek !== null && !isTerminal(peek.status);
  const rankChange = changesRank(input);
  const graphLocked = forceGraphLock || rankChange || (toTerminal && peek.hasBlockEdges);
  const sharedGraphLock = graphLocked && !forceGraphLock && !rankChange && peek!.openBlockerCount === 0;
  const [, row, edgesNow, ahead] = await inOrder(
    () => (graphLocked ? lockOrgGraph(tx, orgId, sharedGraphLock ? "shared" : "exclusive") : Promise.resolve()),
    () => findIssue(tx, scope.ctx.principal, identifier, { forUpdate: true }),
    () => (toTerminal && !graphLocked ? hasBlockEdges(tx, orgId, identifier) : Promise.resolve(false)),
    // Addressed by identifier like the row, under the graph lock: nothing can re-rank it meanwhile.
    () => (ranksAhead(input) ? readRankGraph(tx, sql`i.org_id = ${orgId} and i.identifier = retasc_identifier(${orgId}, ${identifier})`) : Promise.resolve(null)),
  );
  // An edge appeared between the peek and the lock, or a blocker did (only graph changes add
  // either, and they hold the lock exclusively): rerun holding it exclusively.
  if (edgesNow || (sharedGraphLock && row.openBlockerCount > 0)) return undefined;
  // The row's read that waited for a rename of its prefix (findIssue) finds it where the graph's did not: read it by id.
  const rankGraph = ahead && !ahead.some((n) => n.id === row.id) ? await readRankGraph(tx, sql`i.id = ${row.id}`) : ahead;
  return { row, graphLocked, rankGraph };
}

/** Checks each field the input sets, in the order they are refused, and collects the new values. */
async function changeOf(scope: WriteScope, row: IssueRow, input: SaveInput): Promise<Change> {
  const { tx, ctx, now, cipher } = scope;
  const orgId = ctx.principal.orgId;
  const patch: Change["patch"] = { updatedAt: now };
  const changed: string[] = [];
  let finishLease: Change["finishLease"] = null;
  const from = row.status;
  const to = input.status ?? row.status;

  // Outsiders' work is let in by a person who read it (server/intake/triage.ts), never through
  // save_issue; an agent may cancel it, not move it on (decision 038).
  if (input.triage !== undefined) throw personOnly(ctx.config, row.identifier, "accepting outside work");
  if (row.triage === "pending" && ctx.principal.kind === "agent" && to !== from && to !== "canceled") {
    throw personOnly(ctx.config, row.identifier, `moving it to ${to}`);
  }
  if (input.status !== undefined && to !== from) {
    if (isTerminal(from)) {
      throw new DomainError("INVALID_INPUT", `${row.identifier} is ${from}; terminal issues stay closed`, "File a new issue that references it instead.");
    }
    finishLease = await checkTransition(scope, row, input, to);
    patch.status = to;
    changed.push("status");
  }
  await checkHandoff(scope, row, input, finishLease !== null && patch.status === "review");
  checkEvidenceGoesWithFinish(input, to);
  if (finishLease && patch.status) Object.assign(patch, await finishEvidence(scope, row, input, to));
  if (input.title !== undefined) {
    patch.titleEnc = cipher.encrypt(input.title);
    // Once claimed, the branch stays the one the old title named (docs/architecture.md#leases).
    if (row.firstClaimedAt && row.branch === null) patch.branch = branchName(row.identifier, cipher.decrypt(row.titleEnc));
    changed.push("title");
  }
  if (input.body !== undefined) {
    patch.bodyEnc = cipher.encrypt(input.body);
    changed.push("body");
  }
  if (input.work !== undefined && input.work !== row.work) {
    if (isLeaseLive(row, now)) throw alreadyClaimed(row.identifier, await currentHolder(tx, row, now), "work");
    patch.work = input.work;
    changed.push("work");
  }
  if (input.changeType !== undefined && input.changeType !== row.changeType) {
    patch.changeType = input.changeType;
    changed.push("changeType");
  }
  let assigneeId = row.assigneeId;
  if (input.assignee !== undefined) {
    assigneeId = await resolveAssignee(tx, ctx, input.assignee);
    patch.assigneeId = assigneeId;
    changed.push("assignee");
  }
  if (to === "review") await checkReviewer(tx, ctx, row, assigneeId, patch.status === "review" ? ctx.principal.userId : row.submitterId);
  if (input.parent !== undefined) {
    patch.parentId = input.parent ? (await validParent(tx, ctx.principal, input.parent, row.id)).id : null;
    changed.push("parent");
  }
  const priority = input.priority ?? row.priority;
  if (input.priority !== undefined) {
    patch.priority = input.priority;
    changed.push("priority");
  }
  let dueAt = row.dueAt;
  let dueSetAt = row.dueSetAt;
  if (input.dueAt !== undefined) {
    dueAt = input.dueAt === null ? null : parseDueAt(input.dueAt, await orgTimeZone(tx, orgId));
    dueSetAt = dueAt ? now : null;
    Object.assign(patch, { dueAt, dueSetAt });
    changed.push("dueAt");
  }
  if (input.cancelReason !== undefined) {
    if (to !== "canceled") throw invalidInput("cancelReason goes with status canceled", "Pass status:\"canceled\" too.");
    patch.cancelReasonEnc = cipher.encrypt(input.cancelReason);
  }
  const terminalNow = isTerminal(to);
  const reviewSince = reviewSinceAfter(row, { status: to, triage: row.triage }, now);
  if (reviewSince?.getTime() !== row.reviewSince?.getTime()) patch.reviewSince = reviewSince;
  if (changesRank(input) || terminalNow !== isTerminal(from)) {
    Object.assign(patch, rankingColumns(priority, dueAt, dueSetAt ?? row.createdAt, terminalNow, now, reviewClockOf({ status: to, reviewSince })));
  }
  if (to === "review" && from !== "review") patch.submitterId = ctx.principal.userId;
  if (from === "review" && to === "todo") patch.submitterId = null;
  if (input.labels) changed.push("labels");
  return { patch, changed, finishLease, from, to };
}

/**
 * Writes the row, then what follows from it: gated issues, labels, the lease, the rank. Returns the
 * row as written when the rank was computed ahead (`ranksAhead`: nothing after writes the row), else null.
 */
async function write(scope: WriteScope, { row, graphLocked, rankGraph }: Locked, input: SaveInput, { patch, finishLease, from, to }: Change) {
  const { tx } = scope;
  const closed = isTerminal(to) && !isTerminal(from);
  // A finish awaiting CI still holds its dependents back (gatesDependents): they are let go when it passes.
  const releasesDependents = closed && patch.verification !== "pending";
  const ranks = rankGraph ? rankChanges(rankGraph, new Map([[row.id, { ownLevel: patch.ownLevel!, dueAt: patch.dueAt !== undefined ? patch.dueAt : row.dueAt }]])) : [];
  const own = ranks.find((c) => c.id === row.id);
  const [written] = await inOrder(
    () => {
      const update = tx.update(issues).set(own ? { ...patch, effectiveLevel: own.level, effectiveDueAt: own.due } : patch).where(eq(issues.id, row.id));
      return rankGraph ? update.returning() : update;
    },
    // Whatever this gated loses a blocker; whatever blocks it loses its urgency (the rerank).
    // Closing without the graph lock means the locked read found no dependency edges (and none
    // can be added while the row is locked), so there is nothing to decrement.
    () =>
      releasesDependents && graphLocked
        ? tx.execute(sql`update issues set open_blocker_count = open_blocker_count - 1
            where id in (select target_id from relations where source_id = ${row.id} and type = 'blocks')`)
        : Promise.resolve(),
    () => writeRanks(tx, ranks.filter((c) => c !== own)),
    async () => {
      // The duplicate gate's index follows the words (decision 066); its open flag follows the status by trigger.
      if (input.title !== undefined || input.body !== undefined) {
        const { cipher } = scope;
        const body = input.body !== undefined ? input.body : cipher.decrypt(row.bodyEnc);
        await indexTerms(tx, cipher, row.orgId, [{ id: row.id, title: input.title ?? cipher.decrypt(row.titleEnc), body, status: to }]);
      }
      if (input.labels) await setLabels(scope, row.id, input.labels);
      // The handoff is the checkpoint the reviewer's claim returns, written under the lease that entered review.
      if (input.handoff !== undefined) await writeCheckpoint(scope, row, { done: input.handoff });
      if (finishLease) await endLease(scope, row, finishLease);
      if (closed ? graphLocked : changesRank(input) && !rankGraph) await rerank(tx, [row.id]);
    },
  );
  return rankGraph ? (written as IssueRow[])[0]! : null;
}

/** Records the change (activity, notices, the live event) and returns the issue as it now is (`written`, or read back). */
async function record(scope: WriteScope, row: IssueRow, input: SaveInput, { patch, changed, finishLease, from, to }: Change, written: IssueRow | null) {
  const { tx, ctx, now, cipher } = scope;
  const orgId = ctx.principal.orgId;
  const entries: (() => Promise<void>)[] = [];
  if (patch.status) {
    entries.push(() =>
      recordActivity(scope, {
        issueId: row.id,
        kind: finishLease ? "finished" : "status_changed",
        facts: { from, to, fence: row.fence, ...(patch.verification ? { verification: patch.verification } : {}) },
        ...(to === "canceled"
          ? { detail: { reason: input.cancelReason } }
          : input.evidence || input.handoff
            ? { detail: { evidence: input.evidence, handoff: input.handoff } }
            : {}),
      }),
    );
  }
  const otherChanges = changed.filter((c) => c !== "status");
  if (otherChanges.length > 0) {
    entries.push(() =>
      recordActivity(scope, {
        issueId: row.id,
        kind: "updated",
        detail: { fields: otherChanges, ...(input.priority !== undefined ? { priority: input.priority } : {}) },
      }),
    );
  }
  const results = await inOrder(
    ...entries,
    ...notices(scope, row, {
      statusChanged: patch.status !== undefined,
      to,
      assigned: patch.assigneeId !== undefined && patch.assigneeId !== null && patch.assigneeId !== row.assigneeId,
    }),
    () => ctx.events.publish(tx, { orgId, kind: "issue.updated", issueId: row.id, identifier: row.identifier, status: to }),
    () => (written ? Promise.resolve(written) : findIssue(tx, ctx.principal, row.identifier)),
    () => issueViewReads(tx, ctx.principal, row.id, now, row.orgId),
  );
  const [updated, reads] = results.slice(-2) as [IssueRow, ViewReads];
  return renderIssueView(cipher, updated, reads, now);
}
