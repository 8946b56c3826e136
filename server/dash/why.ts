import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import type { SlaState } from "../../db/schema/index.ts";
import { levelOfPriority } from "../issues/levels.ts";
import { idList } from "../issues/ranking.ts";
import { isOpen } from "../../db/schema/dispatch.ts";
import { reaches, type Reach } from "../orgs/scope.ts";

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
  /** The gated issue whose urgency this one carries, when effective > own; identifier null: one outside the viewer's projects. */
  inheritedFrom: { identifier: string | null; raisedByDeadline: SlaState | null } | null;
  /** The gated issue whose deadline this one carries, when it is earlier than its own; identifier null as above. */
  deadlineFrom: { identifier: string | null; dueAt: string } | null;
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
  project_id: string;
  number: number;
  own_level: number;
  priority: number;
  sla_state: SlaState;
  due_at: string | Date | null;
  level_match: boolean;
  due_match: boolean;
}

/** The deadline state that raised the own level, if one did (a review's age raises it too, decision 073). */
const deadlineRaise = (priority: number, ownLevel: number, sla: SlaState): SlaState | null =>
  ownLevel > levelOfPriority(priority) && sla !== "none" && sla !== "ok" ? sla : null;

const inheritsDeadline = (row: RankedRow) =>
  row.effectiveDueAt !== null && (row.dueAt === null || row.effectiveDueAt.getTime() < row.dueAt.getTime());

/** `reach`: the viewer's projects; an origin outside them is told as such, never named (decision 042). */
export async function rankReasons(db: Db, reach: Pick<Reach, "projectIds">, rows: RankedRow[]): Promise<Map<string, RankReason>> {
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
  // Along the path from an issue to the one it inherits from, every issue carries the same
  // effective level (or deadline), so the walk only follows edges that keep it. The lateral
  // subquery (kept apart by `offset 0`) makes each step an index lookup of the few edges of
  // the rows just reached, never a hash of the org's whole edge table.
  const origins = await query<OriginRow>(
    db,
    sql`with recursive down(origin, id, level, due, identifier, project_id, number, own_level, priority, sla_state, due_at) as (
          select i.id, i.id, i.effective_level, i.effective_due_at, i.identifier, i.project_id, i.number, i.own_level, i.priority, i.sla_state, i.due_at
          from issues i where i.id in (${idList(lifted.map((r) => r.id))})
          union
          select d.origin, t.id, d.level, d.due, t.identifier, t.project_id, t.number, t.own_level, t.priority, t.sla_state, t.due_at from down d
            cross join lateral (
              select t.* from relations r join issues t on t.id = r.target_id
              where r.source_id = d.id and r.type = 'blocks' and ${isOpen(sql`t.status`)}
                and (t.effective_level = d.level or t.effective_due_at = d.due)
              offset 0
            ) t
        )
        select origin, identifier, project_id, number, own_level, priority, sla_state, due_at,
               (own_level = level) as level_match,
               (due_at is not null and due_at = due) as due_match
        from down
        where id <> origin and (own_level = level or due_at = due)
        order by number`,
  );
  for (const row of lifted) {
    const reason = reasons.get(row.id)!;
    // Origins the viewer sees first; one outside their projects is only said to exist.
    const candidates = origins.filter((o) => o.origin === row.id).sort((a, b) => Number(!reaches(reach, a.project_id)) - Number(!reaches(reach, b.project_id)));
    const level = row.effectiveLevel > row.ownLevel ? candidates.find((o) => o.level_match) : undefined;
    if (level) {
      const seen = reaches(reach, level.project_id);
      reason.inheritedFrom = {
        identifier: seen ? level.identifier : null,
        raisedByDeadline: seen ? deadlineRaise(Number(level.priority), Number(level.own_level), level.sla_state) : null,
      };
    }
    const due = inheritsDeadline(row) ? candidates.find((o) => o.due_match) : undefined;
    if (due) reason.deadlineFrom = { identifier: reaches(reach, due.project_id) ? due.identifier : null, dueAt: new Date(due.due_at!).toISOString() };
  }
  return reasons;
}
