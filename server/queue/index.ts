import { and, eq, gt, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import { query, type Db } from "../../db/client.ts";
import { DISPATCH_STATUSES, dispatchable, dispatchOrder, inLanes, othersLanes } from "../../db/schema/dispatch.ts";
import { checkpoints, issues, leases, user } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { randomToken, sha256, type OrgCipher } from "../crypto/index.ts";
import { DomainError } from "../errors.ts";
import { notifyAll, sendNotices, type Notice } from "../events/index.ts";
import { newId } from "../orgs/index.ts";
import {
  findIssue,
  inOrder,
  inTransaction,
  issueRowFrom,
  latestCheckpoint,
  openBlockersOf,
  retryingConflicts,
  type IssueRow,
  type WriteScope,
} from "../issues/store.ts";
import { checkpointView, isLeaseLive, renderIssueView, summarize, viewReadsFrom, type ViewReadsJson } from "../issues/views.ts";
import { currentHolder, describeHolder, endLease, requireLiveToken } from "../issues/fencing.ts";
import { idList } from "../issues/ranking.ts";
import {
  checkClaimInput,
  checkpointInput,
  claimIssueInput,
  heartbeatInput,
  nextBatchInput,
  nextIssueInput,
  releaseIssueInput,
} from "./schemas.ts";
import { batching, inCallOrder } from "../issues/batching.ts";
import { slaSweepOrg } from "./sla.ts";

export { reclaimSweep } from "./reclaim.ts";
export { slaSweep } from "./sla.ts";

/** Dispatch reads alias issues as `i`, so the SQL fragments below apply to typed selects too. */
const i = alias(issues, "i");

const order = dispatchOrder(i);

/** The caller's human as an SQL operand (null for a principal without one). */
function me(ctx: Ctx): SQL {
  const userId = ctx.principal.userId;
  return userId ? sql`${userId}::text` : sql`null::text`;
}

const dispatchableAt = (now: Date) => dispatchable(i, sql`${now.toISOString()}::timestamptz`);

/** The key's project, or the whole org for a key without one. */
function scopeOf(ctx: Ctx): SQL {
  return ctx.principal.projectId
    ? sql`i.project_id = ${ctx.principal.projectId} and i.org_id = ${ctx.principal.orgId}`
    : sql`i.org_id = ${ctx.principal.orgId}`;
}

/** Lanes: the caller's human plus unassigned, or all of them. Nobody is ever handed their own work to review. */
function laneOf(ctx: Ctx, allLanes: boolean | undefined): SQL {
  return inLanes(i, me(ctx), allLanes ? sql`true` : sql`false`);
}

async function countReady(db: Db, ctx: Ctx, now: Date, lane: SQL): Promise<number> {
  const rows = await query<{ n: number }>(
    db,
    sql`select count(*)::int as n from issues i where ${scopeOf(ctx)} and ${dispatchableAt(now)} and ${lane}`,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Per-key live-claim cap. retasc_key_budget counts under an advisory lock on the key, which
 * serialises one key's claims, so the cap holds exactly even when eight agents share a key.
 * The count goes out with `then` (the claim's own read) in one round trip.
 */
interface Budget<T> {
  live: number;
  cap: number;
  /** What the claim read in the same round trip. */
  then: T;
}

async function claimBudget<T>(scope: WriteScope, then: () => PromiseLike<T>): Promise<Budget<T>> {
  const { tx, ctx, now } = scope;
  const cap = ctx.principal.claimCap ?? ctx.config.CLAIM_CAP_DEFAULT;
  const keyId = ctx.principal.keyId;
  if (!keyId) return { live: 0, cap, then: await then() };
  const [rows, result] = await inOrder(
    () => query<{ live: number }>(tx, sql`select retasc_key_budget(${keyId}::text, ${now.toISOString()}::timestamptz) as live`),
    then,
  );
  return { live: Number(rows[0]!.live), cap, then: result };
}

const claimCapError = (cap: number) =>
  new DomainError(
    "CLAIM_CAP",
    `this key already holds ${cap} live claims, its cap`,
    "Finish or release_issue one of your claims before taking another.",
    { cap },
  );

/** What retasc_take_lease returns (db/migrations/0006_dispatch_functions.sql). */
interface TakenLease {
  issue: Record<string, unknown>;
  reads: ViewReadsJson;
  /** When the lease started. */
  now: string;
  notices: Notice[];
}

/** Who takes a lease, from when, the new lease's id, token hash and TTL: the lease arguments of the dispatch functions. */
function leaseFields(ctx: Ctx, now: Date, claimToken: string) {
  const p = ctx.principal;
  return {
    userId: p.userId,
    keyId: p.keyId,
    runtime: p.runtime,
    now: now.toISOString(),
    leaseId: newId(),
    tokenHash: sha256(claimToken),
    ttlMs: ctx.config.leaseTtlMs,
  };
}

function claimReply(cipher: OrgCipher, taken: TakenLease, claimToken: string, otherClaims: number) {
  const row = issueRowFrom(taken.issue);
  const issue = renderIssueView(cipher, row, viewReadsFrom(taken.reads), new Date(taken.now));
  return {
    identifier: row.identifier,
    claimToken,
    fence: row.fence,
    expiresAt: row.leaseExpiresAt!.toISOString(),
    branch: issue.branch,
    checkpoint: issue.checkpoint,
    otherClaims,
    issue,
  };
}
export type ClaimReply = ReturnType<typeof claimReply>;

/** Takes the lease on a locked, dispatchable row, in one statement (retasc_take_lease). Ends (and records) an expired predecessor. */
async function claimRow(scope: WriteScope, row: IssueRow, otherClaims: number): Promise<ClaimReply> {
  // The lease starts once the row lock is held, which can be well after the transaction
  // began; reading the clock again keeps lease intervals of one issue from ever overlapping.
  scope.now = new Date(Math.max(scope.now.getTime(), scope.ctx.clock.now().getTime()));
  const claimToken = randomToken("rtclm_", 24);
  const lease = leaseFields(scope.ctx, scope.now, claimToken);
  const [taken] = await query<{ taken: TakenLease }>(
    scope.tx,
    sql`select retasc_take_lease(${row.id}::text, ${scope.ctx.principal.orgId}::text, ${lease.userId}::text, ${lease.keyId}::text,
      ${lease.runtime}::text, ${lease.now}::timestamptz, ${lease.leaseId}::text, ${lease.tokenHash}::text, ${lease.ttlMs}::bigint) as taken`,
  );
  await notifyAll(scope.tx, taken!.taken.notices);
  return claimReply(scope.cipher, taken!.taken, claimToken, otherClaims);
}

async function emptyReply(ctx: Ctx, now: Date, allLanes: boolean | undefined) {
  const ready = await countReady(ctx.db, ctx, now, laneOf(ctx, allLanes));
  const otherLanes = allLanes ? 0 : await countReady(ctx.db, ctx, now, othersLanes(i, me(ctx)));
  return {
    claimed: false as const,
    ready,
    otherLanes,
    message:
      otherLanes > 0
        ? `Nothing claimable in your lane; ${otherLanes} ready issue(s) sit in other people's lanes. Call again with allLanes:true to take one.`
        : ready > 0
          ? "Ready work exists but was claimed concurrently; call next_issue again."
          : "Nothing is claimable right now: everything is held, blocked, or done.",
  };
}

/** Moves any issue whose deadline state time has changed before dispatching, so the order is exact. */
export async function applyDueSla(ctx: Ctx, now: Date) {
  const rows = await query<{ found: boolean }>(
    ctx.db,
    sql`select exists(select 1 from issues i where ${scopeOf(ctx)} and i.sla_next_at <= ${now.toISOString()}::timestamptz) as found`,
  );
  if (rows[0]?.found) await slaSweepOrg(ctx, ctx.principal.orgId);
}

/** Time moved an issue across an SLA threshold since the last sweep: the dispatch reruns after one. */
class SlaThresholdPassed extends Error {}

/** Has time moved an issue in scope across an SLA threshold that the sweep has not applied yet? */
async function slaThresholdPassed(scope: WriteScope): Promise<boolean> {
  const rows = await query<{ found: boolean }>(
    scope.tx,
    sql`select exists(select 1 from issues i where ${scopeOf(scope.ctx)} and i.sla_next_at <= ${scope.now.toISOString()}::timestamptz) as found`,
  );
  return Boolean(rows[0]?.found);
}

/**
 * Runs a dispatch transaction so it orders by current levels. `run` sends the SLA check
 * first, with its own reads; when a threshold has passed it throws SlaThresholdPassed, the
 * transaction rolls back, the sweep re-ranks, and the dispatch reruns (checking again only
 * a few times, so a stream of thresholds cannot starve it).
 */
async function dispatchWithCurrentSla<T>(ctx: Ctx, run: (scope: WriteScope, checkSla: boolean) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await inTransaction(ctx, (scope) => run(scope, attempt < 3));
    } catch (error) {
      if (!(error instanceof SlaThresholdPassed)) throw error;
      await slaSweepOrg(ctx, ctx.principal.orgId);
    }
  }
}

/** The dispatchable issues of the caller's lanes, in dispatch order, unlocked. */
function dispatchCandidates(scope: WriteScope, allLanes: boolean | undefined, limit: number): PromiseLike<IssueRow[]> {
  const { ctx, now } = scope;
  return scope.tx
    .select()
    .from(i)
    .where(sql`${scopeOf(ctx)} and ${dispatchableAt(now)} and ${laneOf(ctx, allLanes)}`)
    .orderBy(...order)
    .limit(limit);
}

/** Locks one issue if it is still dispatchable in the caller's lanes; undefined when taken or being taken meanwhile. */
async function lockIfDispatchable(scope: WriteScope, id: string, allLanes: boolean | undefined): Promise<IssueRow | undefined> {
  const rows = await scope.tx
    .select()
    .from(i)
    .where(sql`i.id = ${id} and ${dispatchableAt(scope.now)} and ${laneOf(scope.ctx, allLanes)}`)
    .for("update", { skipLocked: true });
  return rows[0];
}

type NextIssueOutcome = { outcome: "sla" | "empty" | "cap" } | (TakenLease & { outcome: "claimed"; otherClaims: number });

/** retasc_next_issue's arguments by name. */
type NextIssueCall = ReturnType<typeof leaseFields> & { orgId: string; projectId: string | null; allLanes: boolean; checkSla: boolean; cap: number };

/** next_issue calls that arrive together go out as one statement (retasc_next_issues), at one instant. */
const claimNext = batching<NextIssueCall, NextIssueOutcome>(async (db, calls) => {
  const now = calls.reduce((latest, call) => (call.now > latest ? call.now : latest), calls[0]!.now);
  const [row] = await retryingConflicts(() =>
    query<{ results: (NextIssueOutcome & { index: number })[] }>(
      db,
      sql`select retasc_next_issues(${JSON.stringify(calls.map((call) => ({ ...call, now })))}::jsonb) as results`,
    ),
  );
  return inCallOrder(row!.results);
});

/**
 * Claims the single most urgent dispatchable issue in the caller's lanes: one statement
 * (retasc_next_issue, shared with the calls that arrive alongside) checks deadlines, the key's
 * budget, picks and takes the lease. When a deadline threshold has passed unswept, the sweep
 * re-ranks and the claim reruns (checking again only a few times, so a stream of thresholds
 * cannot starve it).
 */
export async function nextIssue(ctx: Ctx, raw: unknown) {
  const input = nextIssueInput.parse(raw ?? {});
  const { principal } = ctx;
  const cipher = await ctx.keyring.forOrg(ctx.db, principal.orgId);
  const cap = principal.claimCap ?? ctx.config.CLAIM_CAP_DEFAULT;
  for (let attempt = 0; ; attempt++) {
    const claimToken = randomToken("rtclm_", 24);
    const result = await claimNext(ctx.db, {
      orgId: principal.orgId,
      projectId: principal.projectId,
      allLanes: input.allLanes ?? false,
      checkSla: attempt < 3,
      cap,
      ...leaseFields(ctx, ctx.clock.now(), claimToken),
    });
    switch (result.outcome) {
      case "sla":
        await slaSweepOrg(ctx, principal.orgId);
        continue;
      case "empty":
        return emptyReply(ctx, ctx.clock.now(), input.allLanes);
      case "cap":
        throw claimCapError(cap);
      case "claimed":
        sendNotices(ctx.db, result.notices);
        return claimReply(cipher, result, claimToken, result.otherClaims);
    }
  }
}

/** Pairs among `ids` that may not go out together: dependency paths, parent/child, related, duplicate. */
async function conflictsAmong(db: Db, ids: string[]): Promise<Set<string>> {
  const conflicts = new Set<string>();
  if (ids.length < 2) return conflicts;
  const list = idList(ids);
  const pairs = await query<{ a: string; b: string }>(
    db,
    sql`with recursive reach(origin, id) as (
          select r.source_id, r.target_id from relations r where r.type = 'blocks' and r.source_id in (${list})
          union
          select reach.origin, r.target_id from reach join relations r on r.source_id = reach.id and r.type = 'blocks'
        )
        select origin as a, id as b from reach where id in (${list})
        union all
        select source_id, target_id from relations where type in ('related', 'duplicate') and source_id in (${list}) and target_id in (${list})
        union all
        select parent_id, id from issues where id in (${list}) and parent_id in (${list})`,
  );
  for (const { a, b } of pairs) {
    conflicts.add(`${a}|${b}`);
    conflicts.add(`${b}|${a}`);
  }
  return conflicts;
}

/** Up to n mutually independent dispatchable issues in order; a free peek, or all claimed in one transaction. */
export async function nextBatch(ctx: Ctx, raw: unknown) {
  const input = nextBatchInput.parse(raw ?? {});
  const window = Math.min(200, input.n * 4 + 10);
  const result = await dispatchWithCurrentSla(ctx, async (scope, checkSla) => {
    // The window is read unlocked: locking all of it would make concurrent pulls skip issues this batch does not take.
    const candidates = () => dispatchCandidates(scope, input.allLanes, window);
    const read = async (): Promise<Budget<IssueRow[]>> =>
      input.claim ? claimBudget(scope, candidates) : { live: 0, cap: input.n, then: await candidates() };
    const [slaPassed, budget] = await inOrder(() => slaThresholdPassed(scope), read);
    if (checkSla && slaPassed) throw new SlaThresholdPassed();
    const rows = budget.then;
    const conflicts = await conflictsAmong(scope.tx, rows.map((c) => c.id));
    const limit = Math.min(input.n, budget.cap - budget.live);
    if (input.claim && limit <= 0 && rows.length > 0) throw claimCapError(budget.cap);
    const picked: IssueRow[] = [];
    for (const row of rows) {
      if (picked.length >= limit) break;
      if (!picked.every((p) => !conflicts.has(`${p.id}|${row.id}`))) continue;
      const taken = input.claim ? await lockIfDispatchable(scope, row.id, input.allLanes) : row;
      if (taken) picked.push(taken);
    }
    if (picked.length === 0) return null;
    if (!input.claim) {
      return { claimed: false as const, issues: await summarize(scope.tx, scope.cipher, picked, scope.now) };
    }
    const claims: ClaimReply[] = [];
    for (const row of picked) claims.push(await claimRow(scope, row, budget.live + claims.length));
    return { claimed: true as const, claims };
  });
  if (result) return result;
  const empty = await emptyReply(ctx, ctx.clock.now(), input.allLanes);
  return input.claim ? { ...empty, claims: [] } : { ...empty, issues: [] };
}

/** Claims one named issue, ignoring lanes; refuses only for a stated reason. */
export async function claimIssue(ctx: Ctx, raw: unknown) {
  const { identifier } = claimIssueInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const { tx, now } = scope;
    const budget = await claimBudget(scope, () => findIssue(tx, ctx.principal.orgId, identifier, { forUpdate: true }));
    const row = budget.then;
    if (!row.work) {
      throw new DomainError("CONTAINER", `${identifier} is a container (work:false) and is never claimed`, "Claim one of its children instead.", {
        identifier,
      });
    }
    if (!(DISPATCH_STATUSES as readonly string[]).includes(row.status)) {
      throw new DomainError(
        "STATUS_NOT_CLAIMABLE",
        `${identifier} is ${row.status}`,
        row.status === "blocked"
          ? "It is flagged blocked on something external; a person clears that flag."
          : "Terminal issues are not claimed; call next_issue for open work.",
        { identifier, status: row.status },
      );
    }
    if (isLeaseLive(row, now)) {
      const holder = await currentHolder(tx, row, now);
      throw new DomainError(
        "ALREADY_CLAIMED",
        `${identifier} is held by ${holder ? describeHolder(holder) : "another agent"}`,
        "Call next_issue for other work, or wait for the lease to end.",
        { identifier, holder, expiresAt: holder?.expiresAt ?? null },
      );
    }
    if (row.openBlockerCount > 0) {
      const blockers = await openBlockersOf(tx, row.id);
      throw new DomainError(
        "BLOCKED",
        `${identifier} waits on ${blockers.map((b) => `${b.identifier} (${b.status})`).join(", ")}`,
        "Work on a blocker instead (next_issue hands out the most urgent one).",
        { identifier, openBlockers: blockers },
      );
    }
    if (row.status === "review" && row.submitterId && row.submitterId === ctx.principal.userId) {
      throw new DomainError(
        "SELF_REVIEW",
        `you submitted ${identifier} for review; the same principal cannot review it`,
        "Another person's agent must review it.",
        { identifier },
      );
    }
    if (budget.live >= budget.cap) throw claimCapError(budget.cap);
    return claimRow(scope, row, budget.live);
  });
}

/** Does this key hold the issue right now? */
export async function checkClaim(ctx: Ctx, raw: unknown) {
  const { identifier } = checkClaimInput.parse(raw);
  const now = ctx.clock.now();
  const row = await findIssue(ctx.db, ctx.principal.orgId, identifier);
  const holder = await currentHolder(ctx.db, row, now);
  return {
    identifier,
    status: row.status,
    held: holder !== null,
    youHold: holder !== null && holder.keyId !== null && holder.keyId === ctx.principal.keyId,
    holder,
    expiresAt: holder?.expiresAt ?? null,
    fence: row.fence,
  };
}

async function renew(scope: WriteScope, row: IssueRow) {
  const expiresAt = new Date(scope.now.getTime() + scope.ctx.config.leaseTtlMs);
  await scope.tx.update(issues).set({ leaseExpiresAt: expiresAt }).where(eq(issues.id, row.id));
  await scope.tx.update(leases).set({ expiresAt, heartbeatAt: scope.now }).where(eq(leases.id, row.leaseId!));
  return expiresAt;
}

/** Renews the lease. Only heartbeat and checkpoint do. */
export async function heartbeat(ctx: Ctx, raw: unknown) {
  const input = heartbeatInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const row = await findIssue(scope.tx, ctx.principal.orgId, input.identifier, { forUpdate: true });
    await requireLiveToken(scope, row, input.claimToken);
    const expiresAt = await renew(scope, row);
    await recordActivity(scope, {
      issueId: row.id,
      kind: "heartbeat",
      facts: { fence: row.fence },
    });
    await ctx.events.publish(scope.tx, { orgId: ctx.principal.orgId, kind: "claim.renewed", issueId: row.id, identifier: row.identifier });
    return { identifier: row.identifier, expiresAt: expiresAt.toISOString(), fence: row.fence };
  });
}

async function writeCheckpoint(
  scope: WriteScope,
  row: IssueRow,
  notes: { done?: string; next?: string; gotchas?: string; note?: string; branch?: string },
  options: { keepHandoff?: boolean } = {},
) {
  const { tx, ctx, now, cipher } = scope;
  const previous = await latestCheckpoint(tx, row.id);
  // A release note is added to the handoff, not a replacement for it.
  const kept = options.keepHandoff ? previous : null;
  await tx.insert(checkpoints).values({
    id: newId(),
    orgId: ctx.principal.orgId,
    issueId: row.id,
    leaseId: row.leaseId,
    userId: ctx.principal.userId,
    keyId: ctx.principal.keyId,
    runtime: ctx.principal.runtime,
    doneEnc: notes.done !== undefined || !kept ? cipher.encrypt(notes.done ?? null) : kept.doneEnc,
    nextEnc: notes.next !== undefined || !kept ? cipher.encrypt(notes.next ?? null) : kept.nextEnc,
    gotchasEnc: notes.gotchas !== undefined || !kept ? cipher.encrypt(notes.gotchas ?? null) : kept.gotchasEnc,
    noteEnc: cipher.encrypt(notes.note ?? null),
    branch: notes.branch ?? previous?.branch ?? null,
    // Strictly after the previous one (same millisecond, or another instance's clock behind),
    // so "latest" is always the last written; the issue's row lock serialises these writes.
    createdAt: previous && previous.createdAt.getTime() >= now.getTime() ? new Date(previous.createdAt.getTime() + 1) : now,
  });
}

/** Records handoff notes that survive release and reclaim, and renews the lease. */
export async function checkpoint(ctx: Ctx, raw: unknown) {
  const input = checkpointInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const row = await findIssue(scope.tx, ctx.principal.orgId, input.identifier, { forUpdate: true });
    await requireLiveToken(scope, row, input.claimToken);
    await writeCheckpoint(scope, row, input);
    const expiresAt = await renew(scope, row);
    await recordActivity(scope, {
      issueId: row.id,
      kind: "checkpoint",
      facts: { fence: row.fence },
      detail: { done: input.done, next: input.next, gotchas: input.gotchas, note: input.note },
    });
    await ctx.events.publish(scope.tx, { orgId: ctx.principal.orgId, kind: "claim.checkpoint", issueId: row.id, identifier: row.identifier });
    return {
      identifier: row.identifier,
      expiresAt: expiresAt.toISOString(),
      fence: row.fence,
      checkpoint: checkpointView(scope.cipher, await latestCheckpoint(scope.tx, row.id)),
    };
  });
}

/** Returns held work to the pool; the checkpoint stays for the next claimant. */
export async function releaseIssue(ctx: Ctx, raw: unknown) {
  const input = releaseIssueInput.parse(raw);
  return inTransaction(ctx, async (scope) => {
    const row = await findIssue(scope.tx, ctx.principal.orgId, input.identifier, { forUpdate: true });
    await requireLiveToken(scope, row, input.claimToken);
    if (input.note) await writeCheckpoint(scope, row, { note: input.note }, { keepHandoff: true });
    await endLease(scope, row, "released");
    await recordActivity(scope, {
      issueId: row.id,
      kind: "released",
      facts: { fence: row.fence },
      detail: { note: input.note },
    });
    await ctx.events.publish(scope.tx, { orgId: ctx.principal.orgId, kind: "claim.released", issueId: row.id, identifier: row.identifier });
    return { identifier: row.identifier, released: true, status: row.status };
  });
}

/** The fleet in one call: counts by status, ready work, deadline pressure, blocked-on, live claims. */
export async function queueStatus(ctx: Ctx) {
  const now = ctx.clock.now();
  const db = ctx.db;
  const scope = scopeOf(ctx);
  const [byStatus, sla, blocked, live] = await Promise.all([
    query<{ status: string; n: number }>(db, sql`select i.status, count(*)::int as n from issues i where ${scope} group by i.status`),
    query<{ sla_state: string; n: number }>(
      db,
      sql`select i.sla_state, count(*)::int as n from issues i where ${scope} and i.status not in ('done', 'canceled') and i.sla_state <> 'none' group by i.sla_state`,
    ),
    query<{ identifier: string; blocker: string; blocker_status: string }>(
      db,
      sql`select i.identifier, b.identifier as blocker, b.status as blocker_status
          from issues i join relations r on r.target_id = i.id and r.type = 'blocks' join issues b on b.id = r.source_id
          where ${scope} and i.open_blocker_count > 0 and i.status not in ('done', 'canceled') and b.status not in ('done', 'canceled')
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
          eq(issues.orgId, ctx.principal.orgId),
          ctx.principal.projectId ? eq(issues.projectId, ctx.principal.projectId) : undefined,
          gt(issues.leaseExpiresAt, now),
        ),
      )
      .orderBy(leases.expiresAt),
  ]);
  const blockedOn = new Map<string, { identifier: string; status: string }[]>();
  for (const b of blocked) {
    const list = blockedOn.get(b.identifier) ?? [];
    list.push({ identifier: b.blocker, status: b.blocker_status });
    blockedOn.set(b.identifier, list);
  }
  return {
    counts: Object.fromEntries(byStatus.map((r) => [r.status, Number(r.n)])),
    ready: await countReady(db, ctx, now, sql`true`),
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
  };
}
