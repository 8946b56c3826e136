import { sql } from "drizzle-orm";
import { query, type Db } from "../db/client.ts";
import { activityDetail } from "../server/activity/index.ts";
import type { Keyring } from "../server/crypto/index.ts";
import type { AgentRecord, CheckpointNotes, ClaimRecord, ProbeRecord, PullRecord, WriteRecord } from "./records.ts";

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
  };
}

interface IssueRow {
  id: string;
  identifier: string;
  number: number;
  priority: number;
  assignee_id: string | null;
  created_ms: number;
  status: string;
}
interface LeaseRow {
  id: string;
  issue_id: string;
  fence: number;
  user_id: string;
  key_id: string | null;
  /** The MCP session holding it: with shared keys, the session names the holder, not the key. */
  session_id: string | null;
  claimed_ms: number;
  expires_ms: number;
  /** The last renewal, and by what: 'heartbeat' (a heartbeat or checkpoint) or 'calls' (the session's own calls). */
  renewed_ms: number;
  renewed_by: string | null;
  ended_ms: number | null;
  end_reason: string | null;
}
interface ActivityRow {
  id: number;
  issue_id: string;
  kind: string;
  created_ms: number;
  committed_ms: number | null;
  fence: number | null;
  by: string | null;
}
interface CheckpointRow {
  issue_id: string;
  created_ms: number;
  committed_ms: number | null;
  notes: CheckpointNotes;
}

const ms = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000)::float8`);

/** The level of a priority (docs/architecture.md#levels): none 0 < low 1 < medium 2 < high 3 < urgent 4 (no deadlines in the swarm). */
const LEVEL_OF_PRIORITY = [0, 4, 3, 2, 1];

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
    sql`select id, identifier, number, priority, assignee_id, ${ms("created_at")} as created_ms, status
        from issues where org_id = ${orgId}`,
  );
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
        where org_id = ${orgId} and kind in ('claimed', 'heartbeat', 'checkpoint', 'finished', 'released', 'reclaimed')`,
  );
  const checkpointRows = await query<{ issue_id: string; created_ms: number; committed_ms: number | null; done_enc: string | null; next_enc: string | null; note_enc: string | null }>(
    db,
    sql`select issue_id, ${ms("created_at")} as created_ms, ${ms("pg_xact_commit_timestamp(xmin)")} as committed_ms,
          done_enc, next_enc, note_enc
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
    const detail = activityDetail(cipher, { detailEnc: a.detail_enc, facts: a.facts }) as { fence?: number; by?: string };
    return { id: Number(a.id), issue_id: a.issue_id, kind: a.kind, created_ms: Number(a.created_ms), committed_ms: a.committed_ms === null ? null : Number(a.committed_ms), fence: detail.fence ?? null, by: detail.by ?? null };
  });
  const checkpointsOf = new Map<string, CheckpointRow[]>();
  for (const c of checkpointRows) {
    const row: CheckpointRow = {
      issue_id: c.issue_id,
      created_ms: Number(c.created_ms),
      committed_ms: c.committed_ms === null ? null : Number(c.committed_ms),
      notes: { done: cipher.decrypt(c.done_enc), next: cipher.decrypt(c.next_enc), note: cipher.decrypt(c.note_enc) },
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

  // 1. Every issue finished exactly once, by its last lease.
  const leasesOf = new Map<string, LeaseRow[]>();
  for (const l of leases) push(leasesOf, l.issue_id, l);
  for (const list of leasesOf.values()) list.sort((a, b) => a.fence - b.fence);
  const finishCommit = new Map<string, number>();
  let finished = 0;
  const finishesOf = new Map<string, ActivityRow[]>();
  for (const a of activity) if (a.kind === "finished") push(finishesOf, a.issue_id, a);
  for (const issue of issues) {
    const finishes = finishesOf.get(issue.id) ?? [];
    if (issue.status === "done") finished++;
    else violation("unfinished", `${issue.identifier} is ${issue.status}, not done`);
    if (finishes.length !== 1) violation(finishes.length === 0 ? "unfinished" : "finished-twice", `${issue.identifier} finished ${finishes.length} times`);
    const list = leasesOf.get(issue.id) ?? [];
    const finishedLeases = list.filter((l) => l.end_reason === "finished");
    if (issue.status === "done" && (finishedLeases.length !== 1 || finishedLeases[0] !== list.at(-1))) {
      violation("finished-twice", `${issue.identifier}: ${finishedLeases.length} leases ended by finishing; expected exactly one, the last`);
    }
    if (finishes[0]?.committed_ms != null) finishCommit.set(issue.id, finishes[0].committed_ms);
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

  // 4. No blocked issue was ever dispatched: each claim committed after every blocker's finish.
  //    Finishing a blocker updates the blocked row, which a claim holds locked until it commits,
  //    so commit order is exact here.
  for (const a of activity) {
    if (a.kind !== "claimed" || a.committed_ms === null) continue;
    for (const blocker of blockersOf.get(a.issue_id) ?? []) {
      const done = finishCommit.get(blocker);
      if (done === undefined || done >= a.committed_ms) {
        violation("blocked-dispatch", `${byId.get(a.issue_id)?.identifier} fence ${a.fence} was claimed while its blocker ${byId.get(blocker)?.identifier} was open`);
      }
    }
  }

  // 5. Every dispatch was the top of the order in the claimant's lanes at its moment.
  const claimRecords = input.records.filter((r): r is ClaimRecord => r.t === "claim");
  const recordOf = new Map(claimRecords.map((r) => [`${r.identifier}#${r.fence}`, r]));
  const order = computeOrder(issues, blocksOf);
  const { checked, nearMisses } = checkDispatchOrder({
    issues,
    order,
    activity,
    leasesOf,
    blockersOf,
    finishCommit,
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
  const finishedFence = (identifier: string) => {
    const issue = byIdentifier.get(identifier);
    return issue ? leasesOf.get(issue.id)?.find((l) => l.end_reason === "finished")?.fence : undefined;
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
    const finisher = finishedFence(w.identifier);
    if (w.alreadyFinished) alreadyFinishedReplies++;
    const toldFinished = w.alreadyFinished || (w.kind === "finish" && w.outcome === "ok");
    if (toldFinished && w.fence !== finisher) {
      violation("told-finished", `${w.agent}: its ${w.kind} of ${w.identifier} under fence ${w.fence} was told it finished the issue, which fence ${finisher ?? "none"} finished`);
    }
    if (w.kind === "finish" && w.outcome === "ok" && !w.alreadyFinished) {
      const fences = finishedFor.get(w.identifier) ?? new Set<number>();
      finishedFor.set(w.identifier, fences.add(w.fence));
      if (fences.size === 2) violation("finished-twice", `${w.identifier} was reported finished to fences ${[...fences].join(" and ")}`);
    }
    if (w.outcome !== "ok") continue;
    const own = leaseOf(w.identifier, w.fence);
    const later = own && leasesOf.get(own.issue_id)?.find((l) => l.fence === own.fence + 1);
    const ended = own && own.end_reason !== "expired" && own.end_reason !== null ? liveUntil(own) : Infinity;
    const superseded = Math.min(later ? liveFrom(later) : Infinity, w.alreadyFinished && w.fence === finisher ? Infinity : ended);
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
    if (JSON.stringify(expected) !== JSON.stringify(record.checkpoint)) {
      violation(
        "checkpoint",
        `${record.identifier} fence ${record.fence}: the claim carried checkpoint ${JSON.stringify(record.checkpoint)}, ` +
          `the last one written before it was ${JSON.stringify(expected)}`,
      );
    }
  }

  const claimsTotal = activity.filter((a) => a.kind === "claimed").length;
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
    },
  };
}

/**
 * Dispatch order position of every issue (0 = first). In the swarm levels never change while an
 * issue is open (nothing has deadlines, priorities stay, and whatever an open issue transitively
 * blocks is still open), so one static order holds for the whole run: effective level (own level
 * raised to the highest of everything it transitively blocks), then the oldest, then the lowest number.
 */
function computeOrder(issues: IssueRow[], blocksOf: Map<string, string[]>): Map<string, number> {
  const byId = new Map(issues.map((i) => [i.id, i]));
  const level = new Map<string, number>();
  const visit = (id: string): number => {
    const known = level.get(id);
    if (known !== undefined) return known;
    let value = LEVEL_OF_PRIORITY[byId.get(id)?.priority ?? 0] ?? 0;
    for (const target of blocksOf.get(id) ?? []) value = Math.max(value, visit(target));
    level.set(id, value);
    return value;
  };
  for (const issue of issues) visit(issue.id);
  const ranked = [...issues].sort(
    (a, b) => level.get(b.id)! - level.get(a.id)! || a.created_ms - b.created_ms || a.number - b.number,
  );
  return new Map(ranked.map((issue, position) => [issue.id, position]));
}

interface OrderCheck {
  issues: IssueRow[];
  order: Map<string, number>;
  activity: ActivityRow[];
  leasesOf: Map<string, LeaseRow[]>;
  blockersOf: Map<string, string[]>;
  finishCommit: Map<string, number>;
  claimOf: (issueId: string, fence: number) => ActivityRow | undefined;
  endOf: (issueId: string, fence: number) => ActivityRow | undefined;
  records: AgentRecord[];
  recordOf: Map<string, ClaimRecord>;
  inFlight: number;
  violation: (kind: string, message: string) => void;
}

/**
 * For each dispatch (commit time T of a claim whose request went out at S), looks for an issue
 * strictly ahead of it in the order, in the claimant's lanes, that was provably free for the
 * whole window [min(S, T - w), T + w]: every blocker finished (committed) before it, not
 * finished itself, no lease of it live, no claim of it in flight, no reclaim sweep and no agent
 * write touching its row (each briefly locks it, and a claim skips locked rows). Such an issue
 * means the dispatch was not the top of the order. Free only at T counts as a near miss.
 */
function checkDispatchOrder(c: OrderCheck): { checked: number; nearMisses: number } {
  const ranked = [...c.issues].sort((a, b) => c.order.get(a.id)! - c.order.get(b.id)!);
  const byId = new Map(c.issues.map((i) => [i.id, i]));
  const pullsOf = new Map<string, PullRecord[]>();
  // By session, which names the claimant where agents share a key.
  for (const r of c.records) if (r.t === "pull" && r.session) push(pullsOf, r.session, r);
  for (const list of pullsOf.values()) list.sort((a, b) => a.sentAt - b.sentAt);
  const lastPullBefore = (session: string | null, at: number): PullRecord | undefined => {
    const list = (session && pullsOf.get(session)) || [];
    let found: PullRecord | undefined;
    for (const pull of list) {
      if (pull.sentAt > at) break;
      found = pull;
    }
    return found;
  };
  // Busy intervals per issue: leases (claim commit → end), sweeps and agent writes (row locks).
  const busy = new Map<string, [number, number][]>();
  const addBusy = (issueId: string, from: number, to: number) =>
    push(busy, issueId, [from, to]);
  for (const [issueId, list] of c.leasesOf) {
    for (const lease of list) {
      const claim = c.claimOf(issueId, lease.fence);
      // The claim held the row locked from its candidate read on, some time before it read the
      // clock: from the moment its request was sent. Without a claim record (its agent was killed
      // or the reply lost), from the agent's last pull sent before the lease began.
      const sent =
        c.recordOf.get(`${byId.get(issueId)?.identifier}#${lease.fence}`)?.sentAt ?? lastPullBefore(lease.session_id, lease.claimed_ms)?.sentAt ?? Infinity;
      const start = Math.min(claim?.committed_ms ?? lease.claimed_ms, lease.claimed_ms, sent);
      const end = lease.end_reason === "expired" || lease.end_reason === null ? lease.expires_ms : (c.endOf(issueId, lease.fence)?.committed_ms ?? lease.ended_ms ?? Infinity);
      addBusy(issueId, start, end);
    }
  }
  for (const a of c.activity) {
    if (a.kind === "reclaimed" && a.committed_ms !== null) addBusy(a.issue_id, a.created_ms, a.committed_ms);
  }
  const idOf = new Map(c.issues.map((i) => [i.identifier, i.id]));
  for (const r of c.records) {
    if (r.t === "write") addBusy(idOf.get(r.identifier) ?? "", r.sentAt, r.receivedAt);
  }
  const freeDuring = (issue: IssueRow, from: number, to: number): boolean => {
    if (issue.created_ms > from) return false;
    const finishedAt = c.finishCommit.get(issue.id);
    if (finishedAt !== undefined && finishedAt <= to) return false;
    for (const blocker of c.blockersOf.get(issue.id) ?? []) {
      const done = c.finishCommit.get(blocker);
      if (done === undefined || done >= from) return false;
    }
    for (const [start, end] of busy.get(issue.id) ?? []) if (start <= to && end >= from) return false;
    return true;
  };

  let checked = 0;
  let nearMisses = 0;
  for (const a of c.activity) {
    if (a.kind !== "claimed" || a.committed_ms === null || a.fence === null) continue;
    const issue = byId.get(a.issue_id);
    const lease = c.leasesOf.get(a.issue_id)?.find((l) => l.fence === a.fence);
    if (!issue || !lease) continue;
    checked++;
    const record = c.recordOf.get(`${issue.identifier}#${a.fence}`);
    // Without the agent's record the lane mode is unknown: judge against the narrower own lane,
    // whose competitors are a subset of allLanes' (a violation there is one either way).
    const allLanes = record?.allLanes ?? lastPullBefore(lease.session_id, lease.claimed_ms)?.allLanes ?? false;
    const inLane = (other: IssueRow) => allLanes || other.assignee_id === null || other.assignee_id === lease.user_id;
    if (record && !inLane(issue)) c.violation("lane", `${issue.identifier} fence ${a.fence} went to ${record.agent}, outside its lanes`);
    const position = c.order.get(issue.id)!;
    const T = a.committed_ms;
    // The claim read its candidates some time after its request went out: what became ready
    // after that may not have been in its snapshot.
    const sentAt = record?.sentAt ?? lastPullBefore(lease.session_id, lease.claimed_ms)?.sentAt ?? T - c.inFlight;
    const from = Math.min(T - c.inFlight, sentAt);
    for (let p = 0; p < position; p++) {
      const other = ranked[p]!;
      if (!inLane(other)) continue;
      if (!freeDuring(other, T - 1, T)) continue;
      if (freeDuring(other, from, T + c.inFlight)) {
        const nextBusy = Math.min(...(busy.get(other.id) ?? []).map(([start]) => start).filter((start) => start > T));
        c.violation(
          "order",
          `${issue.identifier} fence ${a.fence} dispatched at ${iso(T)} while ${other.identifier}, ahead of it in the order, was ready and free` +
            ` (it was next taken ${Number.isFinite(nextBusy) ? `${Math.round(nextBusy - T)} ms later` : "never"})`,
        );
        break;
      }
      nearMisses++;
    }
  }
  return { checked, nearMisses };
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
  const startOf = (r: AgentRecord) => (r.t === "retry" || r.t === "session" || r.t === "killed" ? r.at : r.t === "claim" ? r.receivedAt : r.sentAt);
  const endOf = (r: AgentRecord) => (r.t === "write" || r.t === "probe" || r.t === "claim" ? r.receivedAt : startOf(r));
  const calls = new Map<string, [number, number][]>();
  for (const list of byAgent.values()) {
    list.forEach((r, index) => {
      const next = list[index + 1];
      if (r.t === "write" || r.t === "probe") {
        if (r.session) push(calls, r.session, [r.sentAt, r.receivedAt]);
      } else if (r.t === "pull" && r.session) push(calls, r.session, [r.sentAt, next ? startOf(next) : Infinity]);
      const session = "session" in r ? r.session : null;
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
function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

const iso = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));
