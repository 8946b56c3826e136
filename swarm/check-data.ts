import { sql } from "drizzle-orm";
import { query, type Db } from "../db/client.ts";
import { activityDetail } from "../server/activity/index.ts";
import type { Keyring } from "../server/crypto/index.ts";
import { ms, push, type ActivityRow, type CheckpointRow, type IssueRow, type LeaseRow, type Violation } from "./check-rows.ts";
import { sessionCalls } from "./session-calls.ts";
import type { AgentRecord } from "./records.ts";

/**
 * What the swarm's checker reads after a run (issues, relations, leases, the activity log and
 * checkpoints, with PostgreSQL's commit timestamps, which the swarm's private cluster records),
 * indexed the ways its checks look them up. Every check (swarm/checker.ts) reads from this.
 */
export interface RunData {
  issues: IssueRow[];
  leases: LeaseRow[];
  activity: ActivityRow[];
  projectOf: Map<string, { id: string; verification_mode: string; quarantine_after: number }>;
  /** The issue's project verifies finishes in CI (decision 045). */
  verifies: (issue: IssueRow) => boolean;
  byId: Map<string, IssueRow>;
  byIdentifier: Map<string, IssueRow>;
  blockersOf: Map<string, string[]>;
  blocksOf: Map<string, string[]>;
  /** An issue's checkpoints, oldest first. */
  checkpointsOf: Map<string, CheckpointRow[]>;
  /** (issue, fence) → the activity rows written under that lease (leaseKey). */
  underLease: Map<string, ActivityRow[]>;
  /** An issue's leases, by fence. */
  leasesOf: Map<string, LeaseRow[]>;
  /** An issue's finishes, failed verifications, passes, claims and quarantines, by commit. */
  finishesOf: Map<string, ActivityRow[]>;
  failuresOf: Map<string, ActivityRow[]>;
  passesOf: Map<string, ActivityRow[]>;
  claimsOf: Map<string, ActivityRow[]>;
  quarantinesOf: Map<string, ActivityRow[]>;
  /** When each MCP session had a call under way (sessionCalls). */
  callsOf: Map<string, [number, number][]>;
  claimOf: (issueId: string, fence: number) => ActivityRow | undefined;
  endOf: (issueId: string, fence: number) => ActivityRow | undefined;
  leaseOf: (identifier: string, fence: number) => LeaseRow | undefined;
  /** When a lease stopped being the issue's: its end (finish or release committed) or its expiry. */
  liveUntil: (l: LeaseRow) => number;
  /** When a lease became the issue's: its claim's commit. */
  liveFrom: (l: LeaseRow) => number;
  /** The fences whose leases finished the issue: one, or one per verification round. */
  finishedFences: (identifier: string) => Set<number>;
}

/** The key of a lease in RunData.underLease. */
export const leaseKey = (issueId: string, fence: number) => `${issueId}#${fence}`;

/**
 * Whether `b` was written before `a`: it committed earlier, or it was written earlier in `a`'s own
 * transaction (a finish and the claims of its statement, decision 124, commit together). Two
 * transactions committing in the same millisecond are not ordered: neither is before the other.
 */
export const writtenBefore = (b: ActivityRow, a: ActivityRow) =>
  (b.committed_ms ?? b.created_ms) < (a.committed_ms ?? a.created_ms) || (b.xid === a.xid && b.id < a.id);

/** Activity in commit order (the creation time where no commit timestamp was recorded), then by id. */
export const byCommit = (a: ActivityRow, b: ActivityRow) => (a.committed_ms ?? a.created_ms) - (b.committed_ms ?? b.created_ms) || a.id - b.id;

export async function readRun(
  input: { db: Db; keyring: Keyring; orgId: string; records: AgentRecord[] },
  violation: Violation,
): Promise<RunData> {
  const { db, orgId } = input;
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
  const activityRows = await query<{ id: number; issue_id: string; kind: string; created_ms: number; committed_ms: number | null; xid: string; detail_enc: string | null; facts: unknown }>(
    db,
    sql`select id, issue_id, kind, ${ms("created_at")} as created_ms,
          ${ms("pg_xact_commit_timestamp(xmin)")} as committed_ms, xmin::text as xid, detail_enc, facts
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
    const detail = activityDetail(cipher, { detailEnc: a.detail_enc, facts: a.facts }) as {
      fence?: number;
      by?: string;
      verification?: string;
      beats?: number;
      lastAt?: string;
    };
    return {
      id: Number(a.id),
      issue_id: a.issue_id,
      kind: a.kind,
      created_ms: Number(a.created_ms),
      committed_ms: a.committed_ms === null ? null : Number(a.committed_ms),
      xid: a.xid,
      // Only lease writes carry their fence; a verdict's or a quarantine's facts name none of ours.
      fence: ["verified", "verification_failed", "quarantined"].includes(a.kind) ? null : (detail.fence ?? null),
      by: detail.by ?? null,
      verification: detail.verification ?? null,
      beats: detail.beats ?? 1,
      last_ms: detail.lastAt ? Date.parse(detail.lastAt) : Number(a.created_ms),
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

  const underLease = new Map<string, ActivityRow[]>();
  for (const a of activity) {
    if (a.fence === null || a.kind === "reclaimed") continue;
    push(underLease, leaseKey(a.issue_id, a.fence), a);
  }
  const claimOf = (issueId: string, fence: number) => underLease.get(leaseKey(issueId, fence))?.find((a) => a.kind === "claimed");
  const endOf = (issueId: string, fence: number) =>
    underLease.get(leaseKey(issueId, fence))?.find((a) => a.kind === "finished" || a.kind === "released");

  const leasesOf = new Map<string, LeaseRow[]>();
  for (const l of leases) push(leasesOf, l.issue_id, l);
  for (const list of leasesOf.values()) list.sort((a, b) => a.fence - b.fence);
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

  const leaseOf = (identifier: string, fence: number) => {
    const issue = byIdentifier.get(identifier);
    return issue ? leasesOf.get(issue.id)?.find((l) => l.fence === fence) : undefined;
  };
  const liveUntil = (l: LeaseRow) =>
    l.end_reason === "expired" || l.end_reason === null ? l.expires_ms : (endOf(l.issue_id, l.fence)?.committed_ms ?? l.ended_ms ?? Infinity);
  const liveFrom = (l: LeaseRow) => claimOf(l.issue_id, l.fence)?.committed_ms ?? l.claimed_ms;
  const finishedFences = (identifier: string) => {
    const issue = byIdentifier.get(identifier);
    return new Set(issue ? (leasesOf.get(issue.id) ?? []).filter((l) => l.end_reason === "finished").map((l) => l.fence) : []);
  };

  return {
    issues,
    leases,
    activity,
    projectOf,
    verifies,
    byId,
    byIdentifier,
    blockersOf,
    blocksOf,
    checkpointsOf,
    underLease,
    leasesOf,
    finishesOf,
    failuresOf,
    passesOf,
    claimsOf,
    quarantinesOf,
    callsOf: sessionCalls(input.records),
    claimOf,
    endOf,
    leaseOf,
    liveUntil,
    liveFrom,
    finishedFences,
  };
}
