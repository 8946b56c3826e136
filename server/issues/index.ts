import { and, eq, inArray, sql, type SQL } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { dispatchOrder } from "../../db/schema/dispatch.ts";
import { issueLabels, issues, labels, members, projects, relations } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import { enqueue } from "../outbox/index.ts";
import type { Ctx } from "../context.ts";
import { sha256 } from "../crypto/index.ts";
import { sendNotices, type Notice } from "../events/index.ts";
import { DomainError, invalidInput, notFound } from "../errors.ts";
import { newId } from "../orgs/index.ts";
import { batching, inCallOrder } from "./batching.ts";
import { currentHolder, describeHolder, endLease, requireLiveToken } from "./fencing.ts";
import { lockOrgGraph, reaches, rerank } from "./ranking.ts";
import { levelOfPriority, ownLevelOf, slaOf } from "./levels.ts";
import {
  getIssueInput,
  listIssuesInput,
  relationInput,
  saveIssueInput,
} from "./schemas.ts";
import {
  findIssue,
  hasBlockEdges,
  inOrder,
  inTransaction,
  issueRowFrom,
  isTerminal,
  orgTimeZone,
  parseDueAt,
  peekStatusAndEdges,
  projectFor,
  resolveAssignee,
  retryingConflicts,
  RetryTransaction,
  type IssueRow,
  type WriteScope,
} from "./store.ts";
import { isLeaseLive, issueView, issueViewReads, renderIssueView, summarize, viewReadsFrom, type ViewReads, type ViewReadsJson } from "./views.ts";

type SaveInput = ReturnType<typeof saveIssueInput.parse>;

/** Create (no identifier) or update an issue. Finishing, review and cancel go through here with the claimToken. */
export async function saveIssue(ctx: Ctx, raw: unknown) {
  const input = saveIssueInput.parse(raw);
  if (!input.identifier) return createIssue(ctx, input);
  if (isPlainFinish(input)) {
    const finished = await finishHeld(ctx, input.identifier, input.claimToken);
    if (finished) return finished;
  }
  return updateIssue(ctx, input, input.identifier);
}

const PLAIN_FINISH_FIELDS = new Set(["identifier", "status", "claimToken"]);

/** `{identifier, status: "done", claimToken}` and nothing else: how every claim ends. */
function isPlainFinish(input: SaveInput): input is SaveInput & { claimToken: string } {
  return input.status === "done" && input.claimToken !== undefined &&
    Object.entries(input).every(([field, value]) => value === undefined || PLAIN_FINISH_FIELDS.has(field));
}

type FinishOutcome = { outcome: "fallback" } | { outcome: "finished"; issue: Record<string, unknown>; reads: ViewReadsJson; notices: Notice[] };

/** retasc_finish's arguments by name. */
interface FinishCall {
  orgId: string;
  identifier: string;
  tokenHash: string;
  now: string;
  userId: string | null;
  keyId: string | null;
  runtime: string | null;
}

/** Finishes that arrive together go out as one statement (retasc_finishes). */
const finishTogether = batching<FinishCall, FinishOutcome>(async (db, calls) => {
  const [row] = await retryingConflicts(() =>
    query<{ results: (FinishOutcome & { index: number })[] }>(db, sql`select retasc_finishes(${JSON.stringify(calls)}::jsonb) as results`),
  );
  return inCallOrder(row!.results);
});

/**
 * Finishes held work as done in one statement (retasc_finish, the hot path's other half).
 * Returns null, having written nothing, for anything but a live token on open work with no
 * open blockers; the general path then answers with the right refusal.
 */
async function finishHeld(ctx: Ctx, identifier: string, claimToken: string) {
  const { principal } = ctx;
  const cipher = await ctx.keyring.forOrg(ctx.db, principal.orgId);
  const now = ctx.clock.now();
  const result = await finishTogether(ctx.db, {
    orgId: principal.orgId,
    identifier,
    tokenHash: sha256(claimToken),
    now: now.toISOString(),
    userId: principal.userId,
    keyId: principal.keyId,
    runtime: principal.runtime,
  });
  if (result.outcome === "fallback") return null;
  sendNotices(ctx.db, result.notices);
  return renderIssueView(cipher, issueRowFrom(result.issue), viewReadsFrom(result.reads), now);
}

function rankingColumns(priority: number, dueAt: Date | null, dueSetAt: Date | null, terminal: boolean, now: Date) {
  if (terminal) {
    // A closed issue feels no deadline pressure and gates nothing: it ranks by its priority alone.
    const level = levelOfPriority(priority);
    return { ownLevel: level, effectiveLevel: level, effectiveDueAt: null, slaState: "none" as const, slaNextAt: null };
  }
  const sla = slaOf(dueAt, dueSetAt, now);
  return { ownLevel: ownLevelOf(priority, sla), slaState: sla.state, slaNextAt: sla.nextAt };
}

async function setLabels(scope: WriteScope, issueId: string, names: string[]) {
  const { tx, ctx } = scope;
  await tx.delete(issueLabels).where(eq(issueLabels.issueId, issueId));
  const unique = [...new Set(names)];
  if (unique.length === 0) return;
  await tx
    .insert(labels)
    .values(unique.map((name) => ({ id: newId(), orgId: ctx.principal.orgId, name })))
    .onConflictDoNothing();
  const rows = await tx
    .select({ id: labels.id })
    .from(labels)
    .where(and(eq(labels.orgId, ctx.principal.orgId), inArray(labels.name, unique)));
  await tx.insert(issueLabels).values(rows.map((l) => ({ issueId, labelId: l.id })));
}

async function createIssue(ctx: Ctx, input: SaveInput) {
  if (!input.title) throw invalidInput("title is required to create an issue", "Pass a one-line title.");
  if (input.work === undefined) {
    throw invalidInput(
      "work is required to create an issue",
      "Pass work:true for a unit an agent executes, work:false for a tracking container.",
    );
  }
  const hasBlockers = (input.blockedBy?.length ?? 0) > 0;
  if (hasBlockers === Boolean(input.noDependency)) {
    throw invalidInput(
      hasBlockers ? "pass blockedBy or noDependency, not both" : "a dependency declaration is required to create an issue",
      'Pass blockedBy: ["RTSC-12"] with what this depends on, or noDependency: "<why it depends on nothing>".',
    );
  }
  if (input.status && input.status !== "todo" && input.status !== "blocked") {
    throw invalidInput(`a new issue starts as todo or blocked, not ${input.status}`, "Create it, then claim it.");
  }
  if (input.claimToken) throw invalidInput("a new issue has no claim", "Omit claimToken when creating.");
  if (input.cancelReason) throw invalidInput("a new issue cannot be canceled", "Omit cancelReason when creating.");

  return inTransaction(ctx, async (scope) => {
    const { tx, now, cipher } = scope;
    const orgId = ctx.principal.orgId;
    if (hasBlockers) await lockOrgGraph(tx, orgId);
    const project = await projectFor(tx, ctx, input.project);
    const [numbered] = await tx
      .update(projects)
      .set({ nextNumber: sql`${projects.nextNumber} + 1` })
      .where(eq(projects.id, project.id))
      .returning({ number: sql<number>`${projects.nextNumber} - 1` });
    const number = Number(numbered!.number);
    const identifier = `${project.prefix}-${number}`;
    // Blockers are share-locked so a concurrent finish cannot slip between our read of their status and our edge.
    const blockers = hasBlockers ? await lockIssues(tx, orgId, input.blockedBy!, "share") : [];
    const assigneeId = input.assignee !== undefined ? await resolveAssignee(tx, ctx, input.assignee) : null;
    const parentId = input.parent ? (await validParent(tx, orgId, input.parent, null)).id : null;
    const dueAt = input.dueAt != null ? parseDueAt(input.dueAt, await orgTimeZone(tx, orgId)) : null;
    const priority = input.priority ?? 0;
    const ranking = rankingColumns(priority, dueAt, dueAt ? now : null, false, now);
    const id = newId();
    const row: typeof issues.$inferInsert = {
      id,
      orgId,
      projectId: project.id,
      number,
      identifier,
      titleEnc: cipher.encrypt(input.title!),
      bodyEnc: cipher.encrypt(input.body ?? null),
      noDependencyEnc: cipher.encrypt(input.noDependency ?? null),
      work: input.work!,
      status: input.status ?? "todo",
      priority,
      assigneeId,
      parentId,
      authorId: ctx.principal.userId,
      dueAt,
      dueSetAt: dueAt ? now : null,
      ...ranking,
      effectiveLevel: ranking.ownLevel,
      effectiveDueAt: dueAt,
      openBlockerCount: blockers.filter((b) => !isTerminal(b.status)).length,
      createdAt: now,
      updatedAt: now,
    };
    await tx.insert(issues).values(row);
    if (blockers.length > 0) {
      await tx
        .insert(relations)
        .values(blockers.map((b) => ({ id: newId(), orgId, sourceId: b.id, targetId: id, type: "blocks" as const })));
      await rerank(tx, [id]);
    }
    if (input.labels) await setLabels(scope, id, input.labels);
    await recordActivity(scope, {
      issueId: id,
      kind: "created",
      detail: { work: row.work, priority, blockedBy: blockers.map((b) => b.identifier) },
    });
    await ctx.events.publish(tx, { orgId, kind: "issue.created", issueId: id, identifier });
    const created = await findIssue(tx, orgId, identifier);
    return issueView(tx, cipher, created, now);
  });
}

/** Locks the named issues of the org in one statement (id order, so lockers never deadlock); NOT_FOUND names a missing one. */
async function lockIssues(tx: Db, orgId: string, identifiers: string[], mode: "share" | "update") {
  const wanted = [...new Set(identifiers)];
  const rows = await tx
    .select({ id: issues.id, identifier: issues.identifier, status: issues.status })
    .from(issues)
    .where(and(eq(issues.orgId, orgId), inArray(issues.identifier, wanted)))
    .orderBy(issues.id)
    .for(mode);
  const missing = wanted.find((identifier) => !rows.some((r) => r.identifier === identifier));
  if (missing) throw notFound(`issue ${missing}`, "Check the identifier (like RTSC-42); list_issues shows what exists.");
  return rows;
}

/** A parent is a container (work:false) in the same org, and never the issue itself or one of its descendants. */
async function validParent(tx: Db, orgId: string, identifier: string, childId: string | null) {
  const parent = await findIssue(tx, orgId, identifier);
  if (parent.work) {
    throw new DomainError("INVALID_INPUT", `${identifier} is a work issue, not a container`, "Parents are containers (work:false).");
  }
  let cursor: string | null = parent.id;
  for (let depth = 0; cursor && depth < 100; depth++) {
    if (cursor === childId) throw new DomainError("CYCLE", `${identifier} is inside this issue`, "Pick a parent that is not one of its descendants.");
    const up: { parentId: string | null }[] = await tx.select({ parentId: issues.parentId }).from(issues).where(eq(issues.id, cursor));
    cursor = up[0]?.parentId ?? null;
  }
  return parent;
}

async function updateIssue(ctx: Ctx, input: SaveInput, identifier: string) {
  const orgId = ctx.principal.orgId;
  let forceGraphLock = false;
  const closing = input.status !== undefined && isTerminal(input.status);
  return inTransaction(ctx, async (scope) => {
    const { tx, now, cipher } = scope;
    // The unlocked peek only decides whether closing the issue needs the graph lock (taken before
    // row locks). An issue not found is reported by the locked read below.
    const peek = closing ? await peekStatusAndEdges(tx, orgId, identifier) : null;
    const toTerminal = peek !== null && !isTerminal(peek.status);
    const rankChange = input.priority !== undefined || input.dueAt !== undefined;
    const graphLocked = forceGraphLock || rankChange || (toTerminal && peek.hasBlockEdges);
    // Closing an issue nothing open blocks re-ranks only that issue (its blockers are all closed),
    // so such closes (every finished claim) share the graph lock instead of queueing on it.
    const sharedGraphLock = graphLocked && !forceGraphLock && !rankChange && peek!.openBlockerCount === 0;
    const [, row, edgesNow] = await inOrder(
      () => (graphLocked ? lockOrgGraph(tx, orgId, sharedGraphLock ? "shared" : "exclusive") : Promise.resolve()),
      () => findIssue(tx, orgId, identifier, { forUpdate: true }),
      () => (toTerminal && !graphLocked ? hasBlockEdges(tx, orgId, identifier) : Promise.resolve(false)),
    );
    // An edge appeared between the peek and the lock, or a blocker did (only graph changes add
    // either, and they hold the lock exclusively): rerun holding it exclusively.
    if (edgesNow || (sharedGraphLock && row.openBlockerCount > 0)) {
      forceGraphLock = true;
      throw new RetryTransaction();
    }

    if (input.blockedBy || input.noDependency) {
      throw invalidInput("dependencies of an existing issue change through add_relation / remove_relation", "Call add_relation with type blocked_by.");
    }
    if (input.claimToken) await requireLiveToken(scope, row, input.claimToken);

    const patch: Partial<typeof issues.$inferInsert> = { updatedAt: now };
    const changed: string[] = [];
    let finishLease: "finished" | null = null;
    const from = row.status;
    const to = input.status ?? row.status;

    if (input.status !== undefined && to !== from) {
      if (isTerminal(from)) {
        throw new DomainError("INVALID_INPUT", `${identifier} is ${from}; terminal issues stay closed`, "File a new issue that references it instead.");
      }
      finishLease = await checkTransition(scope, row, input, to);
      patch.status = to;
      changed.push("status");
    }

    if (input.title !== undefined) {
      patch.titleEnc = cipher.encrypt(input.title);
      changed.push("title");
    }
    if (input.body !== undefined) {
      patch.bodyEnc = cipher.encrypt(input.body);
      changed.push("body");
    }
    if (input.work !== undefined && input.work !== row.work) {
      if (isLeaseLive(row, now)) throw new DomainError("ALREADY_CLAIMED", `${identifier} is held`, "Change work only while nobody holds it.");
      patch.work = input.work;
      changed.push("work");
    }
    let assigneeId = row.assigneeId;
    if (input.assignee !== undefined) {
      assigneeId = await resolveAssignee(tx, ctx, input.assignee);
      patch.assigneeId = assigneeId;
      changed.push("assignee");
    }
    if (to === "review") await checkReviewer(tx, ctx, row, assigneeId, patch.status === "review" ? ctx.principal.userId : row.submitterId);
    if (input.parent !== undefined) {
      patch.parentId = input.parent ? (await validParent(tx, orgId, input.parent, row.id)).id : null;
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
    if (rankChange || terminalNow !== isTerminal(from)) {
      Object.assign(patch, rankingColumns(priority, dueAt, dueSetAt ?? row.createdAt, terminalNow, now));
    }
    if (to === "review" && from !== "review") patch.submitterId = ctx.principal.userId;
    if (from === "review" && to === "todo") patch.submitterId = null;

    if (input.labels) changed.push("labels");
    const closed = terminalNow && !isTerminal(from);
    await inOrder(
      () => tx.update(issues).set(patch).where(eq(issues.id, row.id)),
      // Whatever this gated loses a blocker; whatever blocks it loses its urgency (the rerank).
      // Closing without the graph lock means the locked read found no dependency edges (and none
      // can be added while the row is locked), so there is nothing to decrement.
      () =>
        closed && graphLocked
          ? tx.execute(sql`update issues set open_blocker_count = open_blocker_count - 1
              where id in (select target_id from relations where source_id = ${row.id} and type = 'blocks')`)
          : Promise.resolve(),
      async () => {
        if (input.labels) await setLabels(scope, row.id, input.labels);
        if (finishLease) await endLease(scope, row, finishLease);
        if (closed ? graphLocked : rankChange) await rerank(tx, [row.id]);
      },
    );

    const record: (() => Promise<void>)[] = [];
    if (patch.status) {
      record.push(() =>
        recordActivity(scope, {
          issueId: row.id,
          kind: finishLease ? "finished" : "status_changed",
          facts: { from, to, fence: row.fence },
          ...(to === "canceled" ? { detail: { reason: input.cancelReason } } : {}),
        }),
      );
    }
    const otherChanges = changed.filter((c) => c !== "status");
    if (otherChanges.length > 0) {
      record.push(() =>
        recordActivity(scope, {
          issueId: row.id,
          kind: "updated",
          detail: { fields: otherChanges, ...(input.priority !== undefined ? { priority: input.priority } : {}) },
        }),
      );
    }
    const results = await inOrder(
      ...record,
      ...notices(scope, row, {
        statusChanged: patch.status !== undefined,
        to,
        assigned: patch.assigneeId !== undefined && patch.assigneeId !== null && patch.assigneeId !== row.assigneeId,
      }),
      () => ctx.events.publish(tx, { orgId, kind: "issue.updated", issueId: row.id, identifier, status: to }),
      () => findIssue(tx, orgId, identifier),
      () => issueViewReads(tx, row.id, now),
    );
    const [updated, reads] = results.slice(-2) as [IssueRow, ViewReads];
    return renderIssueView(cipher, updated, reads, now);
  });
}

/** People tied to an issue hear of it through the outbox, written in this transaction, so no notice is lost. */
function notices(scope: WriteScope, row: IssueRow, change: { statusChanged: boolean; to: string; assigned: boolean }) {
  const base = { orgId: row.orgId, issueId: row.id, actorId: scope.ctx.principal.userId };
  const { to } = change;
  if (change.statusChanged && (to === "done" || to === "canceled" || to === "review")) {
    return [() => enqueue(scope.tx, "notify.issue_event", { ...base, kind: to })];
  }
  return change.assigned ? [() => enqueue(scope.tx, "notify.issue_event", { ...base, kind: "assigned" as const })] : [];
}

/**
 * The status rules. Returns "finished" when the transition ends the caller's lease.
 * done and review finish held work and need the live token; canceling held work needs it too;
 * other status writes never touch the lease.
 */
async function checkTransition(scope: WriteScope, row: IssueRow, input: SaveInput, to: string): Promise<"finished" | null> {
  const { ctx, now } = scope;
  const held = isLeaseLive(row, now);
  if (to === "canceled" && !input.cancelReason) {
    throw invalidInput("canceling needs a cancelReason", 'Pass cancelReason: "<why this will not be done>".');
  }
  if (to === "done" || to === "review") {
    if (!row.work) {
      if (to === "review") throw new DomainError("CONTAINER", `${row.identifier} is a container`, "Containers are closed with done, not reviewed.");
      return null;
    }
    await requireLiveToken(scope, row, input.claimToken);
    if (to === "done" && row.status === "review" && row.submitterId && row.submitterId === ctx.principal.userId) {
      throw selfReview(row.identifier);
    }
    return "finished";
  }
  if (to === "canceled") {
    if (!held) return null;
    if (!input.claimToken) {
      const holder = await currentHolder(scope.tx, row, now);
      throw new DomainError(
        "ALREADY_CLAIMED",
        `${row.identifier} is held by ${holder ? describeHolder(holder) : "another agent"}`,
        "The holder cancels it with their claimToken, or release it first.",
        { holder },
      );
    }
    return "finished";
  }
  if (row.status === "review" && to === "todo" && input.claimToken) return "finished";
  return null;
}

const selfReview = (identifier: string) =>
  new DomainError(
    "SELF_REVIEW",
    `you submitted ${identifier} for review; the same principal cannot review it`,
    "Another person's agent must review it. One-principal orgs finish straight to done.",
  );

/** A review lane is an active member other than the principal who submitted the work. */
async function checkReviewer(tx: Db, ctx: Ctx, row: IssueRow, reviewerId: string | null, submitterId: string | null) {
  if (!reviewerId) {
    throw invalidInput(
      `${row.identifier} in review needs a reviewer`,
      'Pass assignee with the reviewer\'s email (another person than you), e.g. assignee:"reviewer@example.com".',
    );
  }
  if (submitterId && reviewerId === submitterId) throw selfReview(row.identifier);
  const member = await tx
    .select({ status: members.status })
    .from(members)
    .where(and(eq(members.orgId, ctx.principal.orgId), eq(members.userId, reviewerId)));
  if (member[0]?.status !== "active") {
    throw invalidInput("the reviewer is not an active member", "Pick an active member as reviewer.");
  }
}

export async function getIssue(ctx: Ctx, raw: unknown) {
  const { identifier } = getIssueInput.parse(raw);
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const row = await findIssue(ctx.db, ctx.principal.orgId, identifier);
  return issueView(ctx.db, cipher, row, ctx.clock.now());
}

export async function listIssues(ctx: Ctx, raw: unknown) {
  const input = listIssuesInput.parse(raw ?? {});
  const orgId = ctx.principal.orgId;
  const where: SQL[] = [eq(issues.orgId, orgId)];
  const statuses = input.status === undefined ? null : Array.isArray(input.status) ? input.status : [input.status];
  where.push(statuses ? inArray(issues.status, statuses) : sql`${issues.status} not in ('done', 'canceled')`);
  if (input.priority !== undefined) where.push(eq(issues.priority, input.priority));
  if (input.slaState) where.push(eq(issues.slaState, input.slaState));
  if (input.project) where.push(eq(issues.projectId, (await projectFor(ctx.db, ctx, input.project)).id));
  if (input.assignee !== undefined) {
    const id = await resolveAssignee(ctx.db, ctx, input.assignee);
    where.push(id ? eq(issues.assigneeId, id) : sql`${issues.assigneeId} is null`);
  }
  if (input.author) where.push(eq(issues.authorId, (await resolveAssignee(ctx.db, ctx, input.author))!));
  if (input.label) {
    where.push(sql`${issues.id} in (select il.issue_id from issue_labels il join labels l on l.id = il.label_id
      where l.org_id = ${orgId} and l.name = ${input.label})`);
  }
  const rows = await ctx.db
    .select()
    .from(issues)
    .where(and(...where))
    .orderBy(...dispatchOrder(issues))
    .limit(input.limit);
  const cipher = await ctx.keyring.forOrg(ctx.db, orgId);
  return { issues: await summarize(ctx.db, cipher, rows, ctx.clock.now()) };
}

type RelationInput = ReturnType<typeof relationInput.parse>;
type RelationEnd = Awaited<ReturnType<typeof lockIssues>>[number];
interface RelationEnds {
  source: RelationEnd;
  target: RelationEnd;
  sourceIdent: string;
  targetIdent: string;
  type: Exclude<RelationInput["type"], "blocked_by">;
}

/**
 * One relation change in a transaction: `blocked_by` is stored as the reverse `blocks`; the org's
 * dependency graph (for `blocks`) and both issues are locked before `apply` runs. When `apply`
 * reports the change took effect, the target's open-blocker count and the rank follow it, and it
 * is recorded on both issues and published.
 */
async function changeRelation(
  ctx: Ctx,
  input: RelationInput,
  change: "added" | "removed",
  apply: (scope: WriteScope, ends: RelationEnds) => Promise<boolean>,
) {
  const [sourceIdent, targetIdent] = input.type === "blocked_by" ? [input.targetId, input.sourceId] : [input.sourceId, input.targetId];
  const type = input.type === "blocked_by" ? "blocks" : input.type;
  return inTransaction(ctx, async (scope) => {
    const { tx } = scope;
    const orgId = ctx.principal.orgId;
    if (type === "blocks") await lockOrgGraph(tx, orgId);
    const locked = await lockIssues(tx, orgId, [sourceIdent, targetIdent], "update");
    const source = locked.find((r) => r.identifier === sourceIdent)!;
    const target = locked.find((r) => r.identifier === targetIdent)!;
    const changed = await apply(scope, { source, target, sourceIdent, targetIdent, type });
    if (changed) {
      if (type === "blocks") {
        if (!isTerminal(source.status)) {
          const step = change === "added" ? sql`${issues.openBlockerCount} + 1` : sql`${issues.openBlockerCount} - 1`;
          await tx.update(issues).set({ openBlockerCount: step }).where(eq(issues.id, target.id));
        }
        await rerank(tx, [source.id]);
      }
      for (const issueId of [source.id, target.id]) {
        await recordActivity(scope, {
          issueId,
          kind: `relation_${change}`,
          detail: { source: sourceIdent, target: targetIdent, type },
        });
      }
      await ctx.events.publish(tx, { orgId, kind: `relation.${change}`, identifier: targetIdent });
    }
    return { sourceId: sourceIdent, targetId: targetIdent, type, changed };
  });
}

/** Adds a relation. `blocks`/`blocked_by` are dispatch edges: cycles are refused. */
export async function addRelation(ctx: Ctx, raw: unknown) {
  const input = relationInput.parse(raw);
  if (input.sourceId === input.targetId) throw invalidInput("an issue cannot relate to itself", "Pass two different issues.");
  const { changed, ...relation } = await changeRelation(ctx, input, "added", async ({ tx }, { source, target, sourceIdent, targetIdent, type }) => {
    if (type === "blocks" && (await reaches(tx, target.id, source.id))) {
      throw new DomainError(
        "CYCLE",
        `${sourceIdent} blocking ${targetIdent} would close a dependency cycle: ${targetIdent} already leads to ${sourceIdent}`,
        "Dependencies must form a DAG; remove the opposite edge first or split the work.",
      );
    }
    const existing =
      type === "blocks"
        ? []
        : await tx
            .select({ id: relations.id })
            .from(relations)
            .where(and(eq(relations.type, type), eq(relations.sourceId, target.id), eq(relations.targetId, source.id)));
    if (existing.length > 0) return false;
    const inserted = await tx
      .insert(relations)
      .values({ id: newId(), orgId: ctx.principal.orgId, sourceId: source.id, targetId: target.id, type })
      .onConflictDoNothing()
      .returning({ id: relations.id });
    return inserted.length > 0;
  });
  return { ...relation, added: changed };
}

export async function removeRelation(ctx: Ctx, raw: unknown) {
  const input = relationInput.parse(raw);
  const { changed, ...relation } = await changeRelation(ctx, input, "removed", async ({ tx }, { source, target, type }) => {
    const pairs = type === "blocks" ? [[source.id, target.id]] : [[source.id, target.id], [target.id, source.id]];
    let removed = 0;
    for (const [s, t] of pairs) {
      const deleted = await tx
        .delete(relations)
        .where(and(eq(relations.sourceId, s!), eq(relations.targetId, t!), eq(relations.type, type)))
        .returning({ id: relations.id });
      removed += deleted.length;
    }
    return removed > 0;
  });
  return { ...relation, removed: changed };
}
