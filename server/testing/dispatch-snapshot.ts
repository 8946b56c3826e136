import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { rankAll, type DispatchFacts, type Rank, type Status } from "../queue/reference-ranking.ts";

/** One issue as stored: the raw facts dispatch depends on, and the ranking columns the engine keeps. */
export interface StoredIssue extends DispatchFacts {
  id: string;
  identifier: string;
  leaseExpiresAt: number | null;
  stored: { ownLevel: number; level: number; due: number | null; openBlockers: number; sla: string };
}

export interface DispatchSnapshot {
  issues: StoredIssue[];
  /** `blocks` edges as [blocker, blocked] identifiers. */
  blocks: [string, string][];
  byIdentifier: Map<string, StoredIssue>;
}

const ms = (v: string | Date | null) => (v === null ? null : new Date(v).getTime());

/** Reads an org's issues and dependency edges straight from the tables, for recomputing dispatch from scratch. */
export async function loadDispatchSnapshot(db: Db, orgId: string, now: number): Promise<DispatchSnapshot> {
  const rows = await query<{
    id: string;
    identifier: string;
    number: number;
    work: boolean;
    status: Status;
    priority: number;
    due_at: string | Date | null;
    due_set_at: string | Date | null;
    created_at: string | Date;
    assignee_id: string | null;
    submitter_id: string | null;
    review_since: string | Date | null;
    lease_id: string | null;
    lease_expires_at: string | Date | null;
    own_level: number;
    effective_level: number;
    effective_due_at: string | Date | null;
    open_blocker_count: number;
    sla_state: string;
  }>(
    db,
    sql`select id, identifier, number, work, status, priority, due_at, due_set_at, created_at, assignee_id, submitter_id, review_since,
               lease_id, lease_expires_at, own_level, effective_level, effective_due_at, open_blocker_count, sla_state
        from issues where org_id = ${orgId} order by number`,
  );
  const edges = await query<{ source: string; target: string }>(
    db,
    sql`select s.identifier as source, t.identifier as target from relations r
        join issues s on s.id = r.source_id join issues t on t.id = r.target_id
        where r.org_id = ${orgId} and r.type = 'blocks'`,
  );
  const issues = rows.map((r): StoredIssue => {
    const leaseExpiresAt = r.lease_id ? ms(r.lease_expires_at) : null;
    return {
      id: r.id,
      key: r.identifier,
      identifier: r.identifier,
      number: Number(r.number),
      work: r.work,
      status: r.status,
      priority: Number(r.priority),
      dueAt: ms(r.due_at),
      windowStart: ms(r.due_set_at) ?? ms(r.created_at),
      reviewSince: ms(r.review_since),
      createdAt: ms(r.created_at)!,
      assignee: r.assignee_id,
      submitter: r.submitter_id,
      leaseExpiresAt,
      leaseLive: leaseExpiresAt !== null && leaseExpiresAt > now,
      stored: {
        ownLevel: Number(r.own_level),
        level: Number(r.effective_level),
        due: ms(r.effective_due_at),
        openBlockers: Number(r.open_blocker_count),
        sla: r.sla_state,
      },
    };
  });
  return {
    issues,
    blocks: edges.map((e) => [e.source, e.target]),
    byIdentifier: new Map(issues.map((i) => [i.identifier, i])),
  };
}

/**
 * Where the engine's stored ranking columns of open issues disagree with a from-scratch
 * recomputation at `now` (own and effective level, effective deadline, open blockers, SLA state).
 */
export function rankingDrift(snapshot: DispatchSnapshot, now: number): string[] {
  const ranks: Map<string, Rank> = rankAll(snapshot.issues, snapshot.blocks, now);
  const closed = new Set(snapshot.issues.filter((i) => i.status === "done" || i.status === "canceled").map((i) => i.key));
  const openBlockers = new Map<string, number>();
  for (const [source, target] of snapshot.blocks) {
    if (!closed.has(source)) openBlockers.set(target, (openBlockers.get(target) ?? 0) + 1);
  }
  const drift: string[] = [];
  for (const issue of snapshot.issues) {
    if (closed.has(issue.key)) continue;
    const rank = ranks.get(issue.key)!;
    const expected = { ownLevel: rank.own, level: rank.level, due: rank.due, openBlockers: openBlockers.get(issue.key) ?? 0, sla: rank.sla };
    for (const field of Object.keys(expected) as (keyof typeof expected)[]) {
      if (expected[field] !== issue.stored[field]) {
        drift.push(`${issue.identifier}.${field}: stored ${issue.stored[field]}, expected ${expected[field]}`);
      }
    }
  }
  return drift;
}
