import type { ActivityRow, IssueRow, LeaseRow } from "./check-rows.ts";
import { iso, push } from "./check-rows.ts";
import type { AgentRecord, ClaimRecord, PullRecord } from "./records.ts";

/**
 * The swarm checker's dispatch-order check (swarm/checker.ts runs it): every claim against the
 * order a from-scratch reading of the graph gives at its moment. See docs/reliability.md.
 */

/** The level of a priority (docs/architecture.md#levels): none 0 < low 1 < medium 2 < high 3 < urgent 4 (no deadlines in the swarm). */
const LEVEL_OF_PRIORITY = [0, 4, 3, 2, 1];

/** An issue's place in the order: higher level first, then the oldest, then the lowest number. */
type RankKey = [level: number, createdMs: number, number: number];
const ahead = (a: RankKey, b: RankKey) => a[0] > b[0] || (a[0] === b[0] && (a[1] < b[1] || (a[1] === b[1] && a[2] < b[2])));

/**
 * Each issue's place in the order at a moment. In the swarm levels never change while an issue
 * is open (nothing has deadlines, and whatever an open issue transitively blocks is still open,
 * and has never been verified or failed), except where a failed verification floors an issue's
 * priority at High (decision 045): from its first failure on it ranks by its stored priority,
 * before that by its seeded one. An issue's effective level is its own level raised to the
 * highest of everything it transitively blocks (at their seeded priorities: none of them can
 * have started, so none has failed); then the oldest, then the lowest number.
 */
export function rankKeys(
  issues: IssueRow[],
  blocksOf: Map<string, string[]>,
  seeded: Map<string, number> | undefined,
  failuresOf: Map<string, ActivityRow[]>,
): (issue: IssueRow, at: number) => RankKey {
  const byId = new Map(issues.map((i) => [i.id, i]));
  const priorityAtStart = (issue: IssueRow) => seeded?.get(issue.identifier) ?? issue.priority;
  const level = new Map<string, number>();
  const below = new Map<string, number>();
  const visit = (id: string): number => {
    const known = level.get(id);
    if (known !== undefined) return known;
    let raised = 0;
    for (const target of blocksOf.get(id) ?? []) raised = Math.max(raised, visit(target));
    below.set(id, raised);
    const value = Math.max(LEVEL_OF_PRIORITY[priorityAtStart(byId.get(id)!)] ?? 0, raised);
    level.set(id, value);
    return value;
  };
  for (const issue of issues) visit(issue.id);
  return (issue, at) => {
    const failed = failuresOf.get(issue.id)?.[0];
    const reopened = failed !== undefined && (failed.committed_ms ?? failed.created_ms) < at;
    const own = reopened ? Math.max(LEVEL_OF_PRIORITY[issue.priority] ?? 0, below.get(issue.id)!) : level.get(issue.id)!;
    return [own, issue.created_ms, issue.number];
  };
}

export interface OrderCheck {
  issues: IssueRow[];
  keyAt: (issue: IssueRow, at: number) => RankKey;
  activity: ActivityRow[];
  leasesOf: Map<string, LeaseRow[]>;
  blockersOf: Map<string, string[]>;
  /** When each issue stopped gating its dependents (its finish, or its verification's pass). */
  gateEnd: Map<string, ActivityRow>;
  /** When each issue was out of dispatch: done (pending or passed) or quarantined. */
  doneSpans: Map<string, [number, number][]>;
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
export function checkDispatchOrder(c: OrderCheck): { checked: number; nearMisses: number } {
  // The order at the start; a failed verification only ever moves an issue up (priority floored at High).
  const start = new Map(c.issues.map((i) => [i.id, c.keyAt(i, -Infinity)]));
  const ranked = [...c.issues].sort((a, b) => (ahead(start.get(a.id)!, start.get(b.id)!) ? -1 : ahead(start.get(b.id)!, start.get(a.id)!) ? 1 : 0));
  const failed = new Set(c.activity.filter((a) => a.kind === "verification_failed").map((a) => a.issue_id));
  const reopened = c.issues.filter((i) => failed.has(i.id));
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
    for (const [doneFrom, doneTo] of c.doneSpans.get(issue.id) ?? []) if (doneFrom <= to && doneTo > from) return false;
    for (const blocker of c.blockersOf.get(issue.id) ?? []) {
      const letGo = c.gateEnd.get(blocker)?.committed_ms;
      if (letGo == null || letGo >= from) return false;
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
    const T = a.committed_ms;
    const own = c.keyAt(issue, T);
    // The claim read its candidates some time after its request went out: what became ready
    // after that may not have been in its snapshot.
    const sentAt = record?.sentAt ?? lastPullBefore(lease.session_id, lease.claimed_ms)?.sentAt ?? T - c.inFlight;
    const from = Math.min(T - c.inFlight, sentAt);
    // Ahead of it at T: ahead at the start (levels only rise), or reopened since and moved ahead.
    const competitors: IssueRow[] = [];
    for (const other of ranked) {
      if (!ahead(start.get(other.id)!, own)) break;
      competitors.push(other);
    }
    for (const other of reopened) if (!ahead(start.get(other.id)!, own) && other !== issue && ahead(c.keyAt(other, T), own)) competitors.push(other);
    for (const other of competitors) {
      if (other === issue || !inLane(other)) continue;
      if (!freeDuring(other, T - 1, T)) continue;
      if (freeDuring(other, from, T + c.inFlight)) {
        const nextBusy = Math.min(...(busy.get(other.id) ?? []).map(([start]) => start).filter((start) => start > T));
        c.violation(
          "order",
          `${issue.identifier} fence ${a.fence} dispatched at ${iso(T)} while ${other.identifier}, ahead of it in the order, was ready and free` +
            ` (it was next taken ${Number.isFinite(nextBusy) ? `${Math.round(nextBusy - T)} ms later` : "never"})` +
            `; the dispatch: ${record ? `${record.agent}${record.batch ? " by next_batch" : ""}, sent ${Math.round(sentAt - T)} ms` : "no agent record"}` +
            `; ${other.identifier} around it: ${historyAround(c, other, T)}`,
        );
        break;
      }
      nearMisses++;
    }
  }
  return { checked, nearMisses };
}

/** What happened to an issue in the few seconds around T (ms relative to T): its leases and activity, for an order violation's message. */
function historyAround(c: OrderCheck, issue: IssueRow, T: number): string {
  const near = (ms: number | null) => ms !== null && ms > T - 5_000 && ms < T + 2_000;
  const rel = (ms: number | null) => (ms === null ? "-" : `${Math.round(ms - T)}`);
  const leases = (c.leasesOf.get(issue.id) ?? [])
    .filter((l) => near(l.claimed_ms) || near(l.expires_ms) || near(l.ended_ms))
    .map((l) => `lease fence ${l.fence} claimed ${rel(l.claimed_ms)} expires ${rel(l.expires_ms)} (renewed ${rel(l.renewed_ms)} by ${l.renewed_by ?? "-"}) ended ${rel(l.ended_ms)} ${l.end_reason ?? ""}`);
  const activity = c.activity
    .filter((a) => a.issue_id === issue.id && (near(a.created_ms) || near(a.committed_ms)))
    .map((a) => `${a.kind} created ${rel(a.created_ms)} committed ${rel(a.committed_ms)}`);
  const ready = (c.blockersOf.get(issue.id) ?? []).map((b) => c.gateEnd.get(b)?.committed_ms ?? null);
  const readySince = ready.length === 0 ? "no blockers" : `ready since ${rel(Math.max(...ready.map((at) => at ?? Infinity)))}`;
  return [readySince, ...leases, ...activity].join("; ");
}
