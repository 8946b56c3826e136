import { sql } from "drizzle-orm";
import { query, type Db } from "../db/client.ts";
import { activityDetail } from "../server/activity/index.ts";
import type { Keyring } from "../server/crypto/index.ts";
import { iso, ms, push, type ActivityRow, type CheckpointRow, type IssueRow, type LeaseRow } from "./check-rows.ts";
import { checkDispatchOrder, rankKeys } from "./dispatch-order.ts";
import type { AgentRecord, CheckpointNotes, ClaimRecord, ProbeRecord, WriteRecord } from "./records.ts";

/**
 * The swarm's invariant checker. It reads the database after the run (issues, relations,
 * leases, the activity log and checkpoints, ordered by PostgreSQL commit timestamps, which
 * the swarm's private cluster records) beside what the agents wrote down, and reports every
 * violation of the dispatch contract it can establish. See docs/reliability.md for what each
 * check proves and where it has to give way.
 */

export interface CheckInput {
  db: Db;
  keyring: Keyring;
  orgId: string;
  ttlMs: number;
  records: AgentRecord[];
  /**
   * The priority each issue was seeded with, by identifier. A failed verification floors an
   * issue's priority at High (decision 045), so its stored priority is its rank only from that
   * failure on. Without it, the stored priorities (right for a run with no failed verification).
   */
  seededPriority?: Map<string, number>;
  /**
   * Poison issues (identifiers): each must end quarantined after exactly its project's
   * quarantine_after abandoned claims and never be claimed after (decision 055). Every other
   * issue must end done (and, in a project that verifies finishes, passed).
   */
  poison?: string[];
  /**
   * How long a claim transaction may plausibly have been in flight around its commit. A
   * competitor ahead in the order only counts against a dispatch if it was free and unlocked
   * for this long on both sides of the dispatch's commit (see checkDispatchOrder).
   */
  inFlightMs?: number;
}

export interface CheckResult {
  /** Examples, up to 20 per kind, each prefixed with its kind. */
  violations: string[];
  violationCounts: Record<string, number>;
  figures: {
    issues: number;
    finished: number;
    claims: number;
    reclaims: number;
    releases: number;
    staleWritesRefused: number;
    staleWritesAccepted: number;
    dispatchesChecked: number;
    /** Competitors ahead that were free within the in-flight window only: allowed, but counted. */
    orderNearMisses: number;
    resumedClaimsChecked: number;
    resumedAfterExpiry: number;
    claimsWithoutAgentRecord: number;
    agentRetries: number;
    /** Claims an orchestrator's next_batch took for its subagents. */
    batchClaims: number;
    /** Refusals the agents were answered (writes and sibling probes), by error code. */
    refusals: Record<string, number>;
    /** Tokenless writes to a sibling session's lease on the same key, answered. */
    siblingProbes: number;
    /** ...of which the lease was live throughout and the answer CLAIM_MISMATCH. */
    siblingMismatches: number;
    siblingProbesAccepted: number;
    /** Agents told their finish went through (one per issue, unless one was killed before it could log it). */
    toldFinished: number;
    /** Finishes retried and told alreadyFinished (only ever the finishing lease). */
    alreadyFinishedReplies: number;
    supersededAccepted: number;
    /** Projects that verify finishes in CI (decision 045). */
    verification: {
      /** Finishes left pending, failed and passed. */
      finishes: number;
      failed: number;
      passed: number;
      /** Failures followed by a new claim of the issue. */
      redispatched: number;
      /** The first claims after a failure whose reply carried the failing checks as gotchas. */
      reopenedWithGotchas: number;
      /** Claims of issues with blockers (each checked to commit after every blocker was let go). */
      gatedClaims: number;
      /** ...committed while a blocker was open, pending or failed: the violations. */
      claimsOnUnverifiedBlocker: number;
    };
    quarantine: {
      poison: number;
      quarantined: number;
      /** Claims of poison issues, and agents that recorded they died on one. */
      claims: number;
      died: number;
      claimedAfter: number;
    };
  };
}

export async function checkInvariants(input: CheckInput): Promise<CheckResult> {
  const { db, orgId, ttlMs } = input;
  const inFlight = input.inFlightMs ?? 250;
  const violations: string[] = [];
  const violationCounts: Record<string, number> = {};
  // Examples are kept per kind, so a flood of one kind never hides another.
  const violation = (kind: string, message: string) => {
    violationCounts[kind] = (violationCounts[kind] ?? 0) + 1;
    if (violationCounts[kind] <= 20) violations.push(`[${kind}] ${message}`);
  };
  const cipher = await input.keyring.forOrg(db, orgId);

  const issues = await query<IssueRow>(
    db,
    sql`select id, identifier, number, priority, assignee_id, ${ms("created_at")} as created_ms, status,
          project_id, verification, ${ms("quarantined_at")} as quarantined_ms, quarantine_reason
        from issues where org_id = ${orgId}`,
  );
  const projectRows = await query<{ id: string; verification_mode: string; quarantine_after: number }>(
    db,
    sql`select id, verification_mode, quarantine_after from projects where org_id = ${orgId}`,
  );
  const projectOf = new Map(projectRows.map((p) => [p.id, p]));
  const verifies = (issue: IssueRow) => projectOf.get(issue.project_id)?.verification_mode === "ci";
  const poison = new Set(input.poison ?? []);
  const edges = await query<{ source_id: string; target_id: string }>(
    db,
    sql`select source_id, target_id from relations where org_id = ${orgId} and type = 'blocks'`,
  );
  const leases = await query<LeaseRow>(
    db,
    sql`select id, issue_id, fence, user_id, key_id, session_id, ${ms("claimed_at")} as claimed_ms, ${ms("expires_at")} as expires_ms,
          ${ms("heartbeat_at")} as renewed_ms, renewed_by, ${ms("ended_at")} as ended_ms, end_reason
        from leases where org_id = ${orgId}`,
  );
  const activityRows = await query<{ id: number; issue_id: string; kind: string; created_ms: number; committed_ms: number | null; detail_enc: string | null; facts: unknown }>(
    db,
    sql`select id, issue_id, kind, ${ms("created_at")} as created_ms,
          ${ms("pg_xact_commit_timestamp(xmin)")} as committed_ms, detail_enc, facts
        from activity
        where org_id = ${orgId} and kind in ('claimed', 'heartbeat', 'checkpoint', 'finished', 'released', 'reclaimed',
          'verified', 'verification_failed', 'quarantined')`,
  );
  const checkpointRows = await query<{ issue_id: string; created_ms: number; committed_ms: number | null; done_enc: string | null; next_enc: string | null; note_enc: string | null; gotchas_enc: string | null }>(
    db,
    sql`select issue_id, ${ms("created_at")} as created_ms, ${ms("pg_xact_commit_timestamp(xmin)")} as committed_ms,
          done_enc, next_enc, note_enc, gotchas_enc
        from checkpoints where org_id = ${orgId}`,
  );
  if (activityRows.some((a) => a.committed_ms === null)) {
    violation("setup", "commit timestamps are missing: the checker needs track_commit_timestamp = on (the swarm's private cluster sets it)");
  }

  const byId = new Map(issues.map((i) => [i.id, i]));
  const byIdentifier = new Map(issues.map((i) => [i.identifier, i]));
  const blockersOf = new Map<string, string[]>();
  const blocksOf = new Map<string, string[]>();
  for (const e of edges) {
    push(blockersOf, e.target_id, e.source_id);
    push(blocksOf, e.source_id, e.target_id);
  }
  const activity: ActivityRow[] = activityRows.map((a) => {
    const detail = activityDetail(cipher, { detailEnc: a.detail_enc, facts: a.facts }) as { fence?: number; by?: string; verification?: string };
    return {
      id: Number(a.id),
      issue_id: a.issue_id,
      kind: a.kind,
      created_ms: Number(a.created_ms),
      committed_ms: a.committed_ms === null ? null : Number(a.committed_ms),
      // Only lease writes carry their fence; a verdict's or a quarantine's facts name none of ours.
      fence: ["verified", "verification_failed", "quarantined"].includes(a.kind) ? null : (detail.fence ?? null),
      by: detail.by ?? null,
      verification: detail.verification ?? null,
    };
  });
  const checkpointsOf = new Map<string, CheckpointRow[]>();
  for (const c of checkpointRows) {
    const row: CheckpointRow = {
      issue_id: c.issue_id,
      created_ms: Number(c.created_ms),
      committed_ms: c.committed_ms === null ? null : Number(c.committed_ms),
      notes: { done: cipher.decrypt(c.done_enc), next: cipher.decrypt(c.next_enc), note: cipher.decrypt(c.note_enc), gotchas: cipher.decrypt(c.gotchas_enc) },
    };
    push(checkpointsOf, c.issue_id, row);
  }
  for (const list of checkpointsOf.values()) list.sort((a, b) => a.created_ms - b.created_ms);

  // (issue, fence) → the activity rows written under that lease.
  const key = (issueId: string, fence: number) => `${issueId}#${fence}`;
  const underLease = new Map<string, ActivityRow[]>();
  for (const a of activity) {
    if (a.fence === null || a.kind === "reclaimed") continue;
    const k = key(a.issue_id, a.fence);
    push(underLease, k, a);
  }
  const claimOf = (issueId: string, fence: number) => underLease.get(key(issueId, fence))?.find((a) => a.kind === "claimed");
  const endOf = (issueId: string, fence: number) =>
    underLease.get(key(issueId, fence))?.find((a) => a.kind === "finished" || a.kind === "released");

  const callsOf = sessionCalls(input.records);

  // 1. Every issue finished exactly once, by its last lease; where the project verifies finishes
  //    (decision 045), once per verification round: finish, red verdict (reopened), finish, ...,
  //    finish, green verdict, each failure followed by a new claim. Poison issues are checked in 10.
  const leasesOf = new Map<string, LeaseRow[]>();
  for (const l of leases) push(leasesOf, l.issue_id, l);
  for (const list of leasesOf.values()) list.sort((a, b) => a.fence - b.fence);
  let finished = 0;
  const byCommit = (a: ActivityRow, b: ActivityRow) => (a.committed_ms ?? a.created_ms) - (b.committed_ms ?? b.created_ms) || a.id - b.id;
  const finishesOf = new Map<string, ActivityRow[]>();
  const failuresOf = new Map<string, ActivityRow[]>();
  const passesOf = new Map<string, ActivityRow[]>();
  const claimsOf = new Map<string, ActivityRow[]>();
  const quarantinesOf = new Map<string, ActivityRow[]>();
  for (const a of activity) {
    if (a.kind === "finished") push(finishesOf, a.issue_id, a);
    else if (a.kind === "verification_failed") push(failuresOf, a.issue_id, a);
    else if (a.kind === "verified" && a.verification === "passed") push(passesOf, a.issue_id, a);
    else if (a.kind === "claimed") push(claimsOf, a.issue_id, a);
    else if (a.kind === "quarantined") push(quarantinesOf, a.issue_id, a);
  }
  for (const map of [finishesOf, failuresOf, passesOf, claimsOf, quarantinesOf]) for (const list of map.values()) list.sort(byCommit);
  /**
   * When each issue stopped gating its dependents, by commit: its finish, or where the project
   * verifies finishes, its pass. A claim locks its row, which either of them updates (the
   * dependents' blocker counts), so commit order is exact.
   */
  const gateEnd = new Map<string, number>();
  /** When each issue was out of dispatch: [finish, failure) per failed round, [last finish, ∞), [quarantine, ∞). */
  const doneSpans = new Map<string, [number, number][]>();
  let redispatched = 0;
  for (const issue of issues) {
    const finishes = finishesOf.get(issue.id) ?? [];
    const failures = failuresOf.get(issue.id) ?? [];
    const passes = passesOf.get(issue.id) ?? [];
    const list = leasesOf.get(issue.id) ?? [];
    const at = (a: ActivityRow) => a.committed_ms ?? a.created_ms;
    // The rounds in commit order: each finish closes the issue until a failure reopens it.
    const events = [...finishes.map((a) => ["finish", a] as const), ...failures.map((a) => ["fail", a] as const)].sort((x, y) => byCommit(x[1], y[1]));
    let openedAt: number | null = null;
    for (const [kind, a] of events) {
      if (kind === "finish") {
        if (openedAt !== null) violation("finished-twice", `${issue.identifier} finished again at ${iso(at(a))} with no failed verification since its finish at ${iso(openedAt)}`);
        openedAt ??= at(a);
      } else {
        if (openedAt === null) violation("verification", `${issue.identifier}: a failed verification at ${iso(at(a))} of no pending finish`);
        else push(doneSpans, issue.id, [openedAt, at(a)]);
        openedAt = null;
        // A red run reopens the work: it is dispatched again.
        if ((claimsOf.get(issue.id) ?? []).some((c) => at(c) > at(a))) redispatched++;
        else if (!poison.has(issue.identifier)) violation("redispatch", `${issue.identifier} failed verification at ${iso(at(a))} and was never claimed again`);
      }
    }
    if (openedAt !== null) push(doneSpans, issue.id, [openedAt, Infinity]);
    if (poison.has(issue.identifier)) continue;
    if (issue.quarantined_ms !== null) {
      violation("quarantined", `${issue.identifier} was quarantined (${issue.quarantine_reason}), and nothing made it fail`);
      continue;
    }
    if (issue.status === "done") finished++;
    else violation("unfinished", `${issue.identifier} is ${issue.status}, not done`);
    const rounds = verifies(issue) ? failures.length + 1 : 1;
    if (finishes.length !== rounds) {
      // Fewer finishes than rounds: done on a red verdict, never finished again.
      violation(
        finishes.length === 0 ? "unfinished" : finishes.length > rounds ? "finished-twice" : "unverified",
        `${issue.identifier} finished ${finishes.length} times` + (failures.length > 0 ? ` with ${failures.length} failed verifications` : ""),
      );
    }
    if (!verifies(issue) && (failures.length > 0 || passes.length > 0)) violation("verification", `${issue.identifier}: verified in a project that does not verify finishes`);
    if (verifies(issue) && issue.status === "done") {
      const last = finishes.at(-1);
      if (issue.verification !== "passed" || passes.length !== 1 || !last || at(passes[0]!) < at(last)) {
        violation("unverified", `${issue.identifier} ended done with verification ${issue.verification} (${passes.length} passes recorded)`);
      }
    }
    const finishedLeases = list.filter((l) => l.end_reason === "finished");
    if (issue.status === "done" && (finishedLeases.length !== finishes.length || finishedLeases.at(-1) !== list.at(-1))) {
      violation("finished-twice", `${issue.identifier}: ${finishedLeases.length} leases ended by finishing; expected ${finishes.length}, the last one last`);
    }
    const end = verifies(issue) ? passes[0] : finishes[0];
    if (end?.committed_ms != null) gateEnd.set(issue.id, end.committed_ms);
  }

  // 2. Leases of one issue never overlap, and fences rise by one per claim.
  //    3. Every write accepted under a lease happened while that lease was live.
  for (const [issueId, list] of leasesOf) {
    const identifier = byId.get(issueId)?.identifier ?? issueId;
    list.forEach((lease, index) => {
      if (lease.fence !== index + 1) violation("fences", `${identifier}: lease fences are ${list.map((l) => l.fence).join(",")}, not 1..n`);
      const claim = claimOf(issueId, lease.fence);
      if (!claim) {
        violation("fences", `${identifier} fence ${lease.fence}: no claimed entry in the activity log`);
        return;
      }
      const next = list[index + 1];
      if (next) {
        const nextClaim = claimOf(issueId, next.fence);
        if (lease.end_reason === null) violation("overlap", `${identifier} fence ${lease.fence} still open when fence ${next.fence} was granted`);
        // Released or finished leases end when that write commits; expired ones at their last expiry.
        const end = lease.end_reason === "expired" ? lease.expires_ms : (lease.ended_ms ?? Infinity);
        if (next.claimed_ms < end) {
          violation("overlap", `${identifier}: fence ${next.fence} claimed at ${iso(next.claimed_ms)} while fence ${lease.fence} held it until ${iso(end)} (${lease.end_reason})`);
        }
        const ended = endOf(issueId, lease.fence);
        if (ended?.committed_ms != null && nextClaim?.committed_ms != null && ended.committed_ms >= nextClaim.committed_ms) {
          violation("overlap", `${identifier}: fence ${next.fence} committed before fence ${lease.fence}'s ${ended.kind} did`);
        }
      }
      // Replay the lease: each accepted write must arrive before the expiry in force at that moment.
      // A heartbeat or checkpoint renews it at a known moment (its activity row); a call of the
      // holding session may renew it too (decision 036), leaving no row: only that it happened
      // within one of the session's calls, so each such call extends the latest possible expiry
      // to its answer + TTL, if it began while the lease could still be live.
      let expiry = claim.created_ms + ttlMs;
      let latest = expiry;
      const calls = (lease.session_id ? (callsOf.get(lease.session_id) ?? []) : []).filter(([, end]) => end >= claim.created_ms);
      let call = 0;
      const renewUpTo = (at: number) => {
        for (; call < calls.length && calls[call]![0] < at; call++) {
          if (calls[call]![0] < latest) latest = Math.max(latest, calls[call]![1] + ttlMs);
        }
      };
      const writes = (underLease.get(key(issueId, lease.fence)) ?? [])
        .filter((a) => a.kind !== "claimed")
        .sort((a, b) => a.created_ms - b.created_ms || a.id - b.id);
      const nextClaim = next ? claimOf(issueId, next.fence) : undefined;
      let renewedAt = claim.created_ms;
      for (const w of writes) {
        renewUpTo(w.created_ms);
        if (w.created_ms >= latest) {
          violation("write-after-expiry", `${identifier} fence ${lease.fence}: ${w.kind} accepted at ${iso(w.created_ms)}, after the lease expired at ${iso(latest)}`);
        }
        if (nextClaim?.committed_ms != null && w.committed_ms != null && w.committed_ms > nextClaim.committed_ms) {
          violation("write-after-supersede", `${identifier} fence ${lease.fence}: ${w.kind} committed after fence ${next!.fence} was claimed`);
        }
        if (w.kind === "heartbeat" || w.kind === "checkpoint") {
          expiry = w.created_ms + ttlMs;
          latest = Math.max(latest, expiry);
          renewedAt = w.created_ms;
        }
      }
      if (lease.renewed_by === "calls") {
        // Its last renewal was by its session's calls: at a moment one of them was under way, after its last heartbeat.
        renewUpTo(lease.renewed_ms);
        const during = calls.some(([start, end]) => start - 1 <= lease.renewed_ms && lease.renewed_ms <= end + 1);
        if (!during || lease.renewed_ms < renewedAt || lease.renewed_ms >= latest || Math.abs(lease.renewed_ms + ttlMs - lease.expires_ms) > 1) {
          violation(
            "lease-expiry",
            `${identifier} fence ${lease.fence}: renewed by its session's calls at ${iso(lease.renewed_ms)} to ${iso(lease.expires_ms)}, ` +
              (during ? `which its renewals do not allow (last heartbeat ${iso(renewedAt)}, latest expiry ${iso(latest)})` : "when that session had no call under way"),
          );
        }
      } else if (Math.abs(expiry - lease.expires_ms) > 1) {
        violation("lease-expiry", `${identifier} fence ${lease.fence}: lease expiry ${iso(lease.expires_ms)} is not what its renewals give (${iso(expiry)})`);
      }
    });
  }

  // 4. No blocked issue was ever dispatched: each claim committed after every blocker was let go,
  //    its finish, or where the project verifies finishes, its pass: never while a blocker was
  //    open, done with verification pending, or reopened by a failed verification.
  let gatedClaims = 0;
  let claimsOnUnverifiedBlocker = 0;
  for (const a of activity) {
    if (a.kind !== "claimed" || a.committed_ms === null) continue;
    const blockers = blockersOf.get(a.issue_id) ?? [];
    if (blockers.length > 0) gatedClaims++;
    let held = false;
    for (const blocker of blockers) {
      const letGo = gateEnd.get(blocker);
      if (letGo !== undefined && letGo < a.committed_ms) continue;
      held = true;
      const before = (b: ActivityRow) => (b.committed_ms ?? b.created_ms) < a.committed_ms!;
      const lastFinish = (finishesOf.get(blocker) ?? []).filter(before).at(-1);
      const lastFailure = (failuresOf.get(blocker) ?? []).filter(before).at(-1);
      const state = !lastFinish
        ? "open"
        : lastFailure && byCommit(lastFailure, lastFinish) > 0
          ? "reopened by a failed verification"
          : byId.get(blocker) && verifies(byId.get(blocker)!)
            ? "done, verification pending"
            : "open";
      violation("blocked-dispatch", `${byId.get(a.issue_id)?.identifier} fence ${a.fence} was claimed while its blocker ${byId.get(blocker)?.identifier} was ${state}`);
    }
    if (held) claimsOnUnverifiedBlocker++;
  }

  // 5. Every dispatch was the top of the order in the claimant's lanes at its moment.
  const claimRecords = input.records.filter((r): r is ClaimRecord => r.t === "claim");
  const recordOf = new Map(claimRecords.map((r) => [`${r.identifier}#${r.fence}`, r]));
  const keyAt = rankKeys(issues, blocksOf, input.seededPriority, failuresOf);
  // A quarantined issue leaves dispatch when the lapse that quarantines it is due: any claim from
  // then on records it and takes nothing (decision 055).
  for (const issue of issues) {
    if (issue.quarantined_ms === null) continue;
    const quarantined = quarantinesOf.get(issue.id)?.[0];
    const last = leasesOf.get(issue.id)?.at(-1);
    const from = Math.min(quarantined?.committed_ms ?? issue.quarantined_ms, last?.end_reason === "expired" ? last.expires_ms : Infinity);
    push(doneSpans, issue.id, [from, Infinity]);
  }
  const { checked, nearMisses } = checkDispatchOrder({
    issues,
    keyAt,
    activity,
    leasesOf,
    blockersOf,
    gateEnd,
    doneSpans,
    claimOf,
    endOf,
    records: input.records,
    recordOf,
    inFlight,
    violation,
  });

  // When each lease stopped being the issue's: its end (finish or release committed) or the next claim's commit.
  const leaseOf = (identifier: string, fence: number) => {
    const issue = byIdentifier.get(identifier);
    return issue ? leasesOf.get(issue.id)?.find((l) => l.fence === fence) : undefined;
  };
  const liveUntil = (l: LeaseRow) =>
    l.end_reason === "expired" || l.end_reason === null ? l.expires_ms : (endOf(l.issue_id, l.fence)?.committed_ms ?? l.ended_ms ?? Infinity);
  const liveFrom = (l: LeaseRow) => claimOf(l.issue_id, l.fence)?.committed_ms ?? l.claimed_ms;
  /** The fences whose leases finished the issue: one, or one per verification round. */
  const finishedFences = (identifier: string) => {
    const issue = byIdentifier.get(identifier);
    return new Set(issue ? (leasesOf.get(issue.id) ?? []).filter((l) => l.end_reason === "finished").map((l) => l.fence) : []);
  };

  // 6. Stale writes: every write an agent sent after its lease's known expiry was refused:
  //    STALE_CLAIM, or CLAIM_MISMATCH while another session of the same key held the issue.
  const writes = input.records.filter((r): r is WriteRecord => r.t === "write");
  let staleRefused = 0;
  let staleAccepted = 0;
  for (const w of writes) {
    if (!w.stale) continue;
    if (w.outcome === "STALE_CLAIM") staleRefused++;
    else if (w.outcome === "ok") {
      staleAccepted++;
      violation("stale-accepted", `${w.agent}: a stale ${w.kind} of ${w.identifier} fence ${w.fence}, sent after its lease expired, was accepted`);
    } else if (w.outcome === "CLAIM_MISMATCH" && heldBySibling(w)) staleRefused++;
    else if (w.outcome !== "transport") {
      violation("stale-wrong-code", `${w.agent}: a stale ${w.kind} of ${w.identifier} was refused with ${w.outcome}, not STALE_CLAIM`);
    }
  }
  /** Another session of the writer's key held the issue at some moment of the write. */
  function heldBySibling(w: WriteRecord): boolean {
    const own = leaseOf(w.identifier, w.fence);
    const issue = byIdentifier.get(w.identifier);
    return (issue ? (leasesOf.get(issue.id) ?? []) : []).some(
      (l) => l.fence > w.fence && l.key_id === own?.key_id && l.session_id !== w.session && liveFrom(l) <= w.receivedAt && liveUntil(l) >= w.sentAt,
    );
  }
  // Writes the agents could not record (they were killed) are covered by the lease replay in 3.

  // 8. Every answer true to its lease: no write accepted under a lease that had already ended or
  //    been superseded when it was sent; "you finished it" (an accepted finish, or alreadyFinished)
  //    only ever to the lease that finished the issue; so no issue is reported finished to two agents.
  let supersededAccepted = 0;
  let alreadyFinishedReplies = 0;
  const finishedFor = new Map<string, Set<number>>();
  for (const w of writes) {
    const finishers = finishedFences(w.identifier);
    if (w.alreadyFinished) alreadyFinishedReplies++;
    const toldFinished = w.alreadyFinished || (w.kind === "finish" && w.outcome === "ok");
    if (toldFinished && !finishers.has(w.fence)) {
      violation("told-finished", `${w.agent}: its ${w.kind} of ${w.identifier} under fence ${w.fence} was told it finished the issue, which fence ${[...finishers].join(", ") || "none"} finished`);
    }
    if (w.kind === "finish" && w.outcome === "ok" && !w.alreadyFinished) {
      const fences = finishedFor.get(w.identifier) ?? new Set<number>();
      finishedFor.set(w.identifier, fences.add(w.fence));
      // One finish per verification round: more fences told than finished it is a second finish.
      if (fences.size === Math.max(1, finishers.size) + 1) violation("finished-twice", `${w.identifier} was reported finished to fences ${[...fences].join(" and ")}`);
    }
    if (w.outcome !== "ok") continue;
    const own = leaseOf(w.identifier, w.fence);
    const later = own && leasesOf.get(own.issue_id)?.find((l) => l.fence === own.fence + 1);
    const ended = own && own.end_reason !== "expired" && own.end_reason !== null ? liveUntil(own) : Infinity;
    const superseded = Math.min(later ? liveFrom(later) : Infinity, w.alreadyFinished && finishers.has(w.fence) ? Infinity : ended);
    if (w.sentAt > superseded) {
      supersededAccepted++;
      violation("superseded-accepted", `${w.agent}: a ${w.kind} of ${w.identifier} under fence ${w.fence} was accepted, sent ${Math.round(w.sentAt - superseded)} ms after that lease ended or was superseded`);
    }
  }

  // 9. A sibling session of the same key is never taken for the holder: its tokenless write to the
  //    issue is refused, CLAIM_MISMATCH whenever the holder's lease was live throughout.
  const probes = input.records.filter((r): r is ProbeRecord => r.t === "probe" && r.outcome !== "transport");
  const sessionsOf = new Map<string, Set<string>>();
  for (const r of input.records) if (r.t === "session") sessionsOf.set(r.agent, (sessionsOf.get(r.agent) ?? new Set()).add(r.session));
  let siblingMismatches = 0;
  let siblingProbesAccepted = 0;
  for (const p of probes) {
    if (p.alreadyFinished) violation("told-finished", `${p.agent}: its tokenless ${p.kind} of ${p.identifier} was told it finished the issue`);
    const issue = byIdentifier.get(p.identifier);
    const holderSessions = sessionsOf.get(p.holder) ?? new Set();
    const live = (issue ? (leasesOf.get(issue.id) ?? []) : []).find(
      (l) => l.session_id !== null && holderSessions.has(l.session_id) && l.session_id !== p.session && liveFrom(l) <= p.sentAt && liveUntil(l) >= p.receivedAt,
    );
    // A tokenless done that reached the issue after its holder finished it changes nothing (an
    // edit of a done issue to done); one that changed it shows in check 1 as a second finish.
    if (p.outcome === "ok" && (live || p.kind !== "finish")) {
      siblingProbesAccepted++;
      violation("sibling-accepted", `${p.agent}: its tokenless ${p.kind} of ${p.identifier}, which ${p.holder} held, was accepted`);
      continue;
    }
    if (!live) continue;
    if (p.outcome === "CLAIM_MISMATCH") siblingMismatches++;
    else violation("sibling-wrong-code", `${p.agent}: its tokenless ${p.kind} of ${p.identifier}, held live by ${p.holder} in another session of its key, was refused ${p.outcome}, not CLAIM_MISMATCH`);
  }
  const refusals: Record<string, number> = {};
  for (const r of [...writes, ...probes]) if (r.outcome !== "ok" && r.outcome !== "transport") refusals[r.outcome] = (refusals[r.outcome] ?? 0) + 1;

  // 7. Every claim after an earlier lease was handed the last checkpoint committed before it.
  let resumedChecked = 0;
  let resumedAfterExpiry = 0;
  let reopenedWithGotchas = 0;
  for (const record of claimRecords) {
    if (record.fence <= 1) continue;
    const issue = byIdentifier.get(record.identifier);
    const claim = issue && claimOf(issue.id, record.fence);
    if (!issue || !claim || claim.committed_ms === null) {
      violation("phantom-claim", `${record.agent} recorded a claim of ${record.identifier} fence ${record.fence} the database does not have`);
      continue;
    }
    const before = (checkpointsOf.get(issue.id) ?? []).filter((c) => c.committed_ms !== null && c.committed_ms < claim.committed_ms!);
    const expected = before.at(-1)?.notes ?? null;
    resumedChecked++;
    const previous = leasesOf.get(issue.id)?.find((l) => l.fence === record.fence - 1);
    if (previous?.end_reason === "expired") resumedAfterExpiry++;
    // The first claim after a failed verification: its checkpoint carries the failing checks.
    const failure = (failuresOf.get(issue.id) ?? []).filter((f) => (f.committed_ms ?? f.created_ms) < claim.committed_ms!).at(-1);
    const firstAfter = failure && !(claimsOf.get(issue.id) ?? []).some((c) => c !== claim && (c.committed_ms ?? 0) > (failure.committed_ms ?? 0) && (c.committed_ms ?? 0) < claim.committed_ms!);
    if (firstAfter && record.checkpoint?.gotchas?.startsWith("CI failed")) reopenedWithGotchas++;
    else if (firstAfter) violation("gotchas", `${record.identifier} fence ${record.fence}, the first claim after its failed verification, was handed gotchas ${JSON.stringify(record.checkpoint?.gotchas ?? null)}`);
    // Notes as the agents record them: gotchas only where the reply carried them.
    const notes = (n: CheckpointNotes | null) => n && { done: n.done, next: n.next, note: n.note, gotchas: n.gotchas ?? null };
    if (JSON.stringify(notes(expected)) !== JSON.stringify(notes(record.checkpoint))) {
      violation(
        "checkpoint",
        `${record.identifier} fence ${record.fence}: the claim carried checkpoint ${JSON.stringify(record.checkpoint)}, ` +
          `the last one written before it was ${JSON.stringify(expected)}`,
      );
    }
  }

  // 10. Poison issues: quarantined after exactly their project's quarantine_after claims, each
  //     abandoned (lapsed or released, no checkpoint under it), and never claimed after.
  let quarantined = 0;
  let poisonClaims = 0;
  let claimedAfter = 0;
  for (const identifier of poison) {
    const issue = byIdentifier.get(identifier);
    if (!issue) {
      violation("quarantine", `poison issue ${identifier} does not exist`);
      continue;
    }
    const k = projectOf.get(issue.project_id)?.quarantine_after ?? 3;
    const list = leasesOf.get(issue.id) ?? [];
    const claims = claimsOf.get(issue.id) ?? [];
    poisonClaims += claims.length;
    if (issue.status !== "blocked" || issue.quarantined_ms === null) {
      violation("quarantine", `poison issue ${identifier} is ${issue.status}${issue.quarantined_ms === null ? ", not quarantined" : ""} after ${list.length} claims`);
      continue;
    }
    quarantined++;
    if (list.length !== k || issue.quarantine_reason !== `quarantined after ${k} abandoned claims`) {
      violation("quarantine", `${identifier} was quarantined after ${list.length} claims (${issue.quarantine_reason}), not ${k}`);
    }
    for (const lease of list) {
      const progress = (underLease.get(key(issue.id, lease.fence)) ?? []).filter((a) => a.kind === "checkpoint" || a.kind === "finished");
      if ((lease.end_reason !== "expired" && lease.end_reason !== "released") || progress.length > 0) {
        violation("quarantine", `${identifier} fence ${lease.fence} was not abandoned (${lease.end_reason}, ${progress.length} checkpoints or finishes under it)`);
      }
    }
    const at = (quarantinesOf.get(issue.id) ?? [])[0]?.committed_ms ?? issue.quarantined_ms;
    const after = claims.filter((c) => (c.committed_ms ?? c.created_ms) > at);
    claimedAfter += after.length;
    if (after.length > 0) violation("quarantine", `${identifier} was claimed ${after.length} times after its quarantine at ${iso(at)}`);
  }

  const claimsTotal = activity.filter((a) => a.kind === "claimed").length;
  const count = (map: Map<string, ActivityRow[]>) => [...map.values()].reduce((n, list) => n + list.length, 0);
  return {
    violations,
    violationCounts,
    figures: {
      issues: issues.length,
      finished,
      claims: claimsTotal,
      reclaims: leases.filter((l) => l.end_reason === "expired").length,
      releases: leases.filter((l) => l.end_reason === "released").length,
      staleWritesRefused: staleRefused,
      staleWritesAccepted: staleAccepted,
      dispatchesChecked: checked,
      orderNearMisses: nearMisses,
      resumedClaimsChecked: resumedChecked,
      resumedAfterExpiry,
      claimsWithoutAgentRecord: claimsTotal - recordOf.size,
      agentRetries: input.records.filter((r) => r.t === "retry").length,
      batchClaims: claimRecords.filter((r) => r.batch).length,
      refusals,
      siblingProbes: probes.length,
      siblingMismatches,
      siblingProbesAccepted,
      toldFinished: [...finishedFor.values()].reduce((n, fences) => n + fences.size, 0),
      alreadyFinishedReplies,
      supersededAccepted,
      verification: {
        finishes: activity.filter((a) => a.kind === "finished" && a.verification === "pending").length,
        failed: count(failuresOf),
        passed: count(passesOf),
        redispatched,
        reopenedWithGotchas,
        gatedClaims,
        claimsOnUnverifiedBlocker,
      },
      quarantine: {
        poison: poison.size,
        quarantined,
        claims: poisonClaims,
        died: input.records.filter((r) => r.t === "died").length,
        claimedAfter,
      },
    },
  };
}

/**
 * When each MCP session had a call under way, as [start, end] in the agents' clock, sorted by
 * start. Each agent makes one call at a time: a write or probe from its send to its answer; a pull
 * from its send until the agent's next record (its answer came before that); after an agent's last
 * record, a call may have been under way until its process was killed (a replaced process's
 * agents start new sessions).
 */
export function sessionCalls(records: AgentRecord[]): Map<string, [number, number][]> {
  const killedAt = new Map<string, number>();
  const procOf = new Map<string, string>();
  const byAgent = new Map<string, AgentRecord[]>();
  for (const r of records) {
    if (r.t === "killed") killedAt.set(r.proc, r.at);
    else {
      if (r.t === "session") procOf.set(r.session, r.proc);
      // A replaced process's agents have the same names: their records follow the killed ones'.
      push(byAgent, r.agent, r);
    }
  }
  const startOf = (r: AgentRecord) => (r.t === "retry" || r.t === "session" || r.t === "killed" || r.t === "died" ? r.at : r.t === "claim" ? r.receivedAt : r.sentAt);
  const endOf = (r: AgentRecord) => (r.t === "write" || r.t === "probe" || r.t === "claim" ? r.receivedAt : startOf(r));
  const calls = new Map<string, [number, number][]>();
  for (const list of byAgent.values()) {
    list.forEach((r, index) => {
      const next = list[index + 1];
      if (r.t === "write" || r.t === "probe") {
        if (r.session) push(calls, r.session, [r.sentAt, r.receivedAt]);
      } else if (r.t === "pull" && r.session) push(calls, r.session, [r.sentAt, next ? startOf(next) : Infinity]);
      const session = "session" in r ? r.session : null;
      // An agent that died on a poison issue makes no call of that session after it (swarm/agent.ts).
      if (r.t === "died") return;
      if (session && (!next || ("session" in next && next.session !== session))) {
        // The session's last record: a call may have followed it until its process died.
        const proc = procOf.get(session);
        push(calls, session, [endOf(r), (proc && killedAt.get(proc)) ?? Infinity]);
      }
    });
  }
  for (const list of calls.values()) list.sort((a, b) => a[0] - b[0]);
  return calls;
}

/** Appends `value` to the list `map` holds under `key`, starting the list if there is none. */
