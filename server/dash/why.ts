import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import type { SlaState } from "../../db/schema/index.ts";
import { levelOfPriority } from "../issues/levels.ts";
import { idList } from "../queue/ranking.ts";

/**
 * Why an issue sits where it does in the queue: its own priority, raised by its own
 * deadline, or inherited from work it gates (and from which issue). Reads the stored
 * ranking columns; the walk down the graph only runs for issues whose effective level or
 * deadline differs from their own.
 */
export interface RankReason {
  priorityLevel: number;
  ownLevel: number;
  effectiveLevel: number;
  /** Set when the issue's own deadline lifted its level above its priority. */
  raisedByDeadline: SlaState | null;
  /** The gated issue whose urgency this one carries, when effective > own. */
  inheritedFrom: { identifier: string; raisedByDeadline: SlaState | null } | null;
  /** The gated issue whose deadline this one carries, when it is earlier than its own. */
  deadlineFrom: { identifier: string; dueAt: string } | null;
}

export interface RankedRow {
  id: string;
  priority: number;
  ownLevel: number;
  effectiveLevel: number;
  slaState: SlaState;
  dueAt: Date | null;
  effectiveDueAt: Date | null;
}

interface OriginRow {
  origin: string;
  identifier: string;
  number: number;
  own_level: number;
  priority: number;
  sla_state: SlaState;
  due_at: string | Date | null;
  level_match: boolean;
  due_match: boolean;
}

const deadlineRaise = (priority: number, ownLevel: number, sla: SlaState): SlaState | null =>
  ownLevel > levelOfPriority(priority) ? sla : null;

const inheritsDeadline = (row: RankedRow) =>
  row.effectiveDueAt !== null && (row.dueAt === null || row.effectiveDueAt.getTime() < row.dueAt.getTime());

export async function rankReasons(db: Db, rows: RankedRow[]): Promise<Map<string, RankReason>> {
  const reasons = new Map<string, RankReason>();
  for (const row of rows) {
    reasons.set(row.id, {
      priorityLevel: levelOfPriority(row.priority),
      ownLevel: row.ownLevel,
      effectiveLevel: row.effectiveLevel,
      raisedByDeadline: deadlineRaise(row.priority, row.ownLevel, row.slaState),
      inheritedFrom: null,
      deadlineFrom: null,
    });
  }
  const lifted = rows.filter((r) => r.effectiveLevel > r.ownLevel || inheritsDeadline(r));
  if (lifted.length === 0) return reasons;
  const origins = await query<OriginRow>(
    db,
    sql`with recursive down(origin, id) as (
          select i.id, i.id from issues i where i.id in (${idList(lifted.map((r) => r.id))})
          union
          select d.origin, r.target_id from down d
            join relations r on r.source_id = d.id and r.type = 'blocks'
            join issues t on t.id = r.target_id and t.status not in ('done', 'canceled')
        )
        select d.origin, t.identifier, t.number, t.own_level, t.priority, t.sla_state, t.due_at,
               (t.own_level = o.effective_level) as level_match,
               (t.due_at is not null and t.due_at = o.effective_due_at) as due_match
        from down d join issues t on t.id = d.id join issues o on o.id = d.origin
        where d.id <> d.origin and (t.own_level = o.effective_level or t.due_at = o.effective_due_at)
        order by t.number`,
  );
  for (const row of lifted) {
    const reason = reasons.get(row.id)!;
    const candidates = origins.filter((o) => o.origin === row.id);
    const level = row.effectiveLevel > row.ownLevel ? candidates.find((o) => o.level_match) : undefined;
    if (level) {
      reason.inheritedFrom = {
        identifier: level.identifier,
        raisedByDeadline: deadlineRaise(Number(level.priority), Number(level.own_level), level.sla_state),
      };
    }
    const due = inheritsDeadline(row) ? candidates.find((o) => o.due_match) : undefined;
    if (due) reason.deadlineFrom = { identifier: due.identifier, dueAt: new Date(due.due_at!).toISOString() };
  }
  return reasons;
}
