import { sql, type SQL } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import type { Principal } from "../context.ts";

/**
 * Logs a heartbeat in the activity log (decision 105): a run of heartbeats is one `heartbeat`
 * row, the first beat's, which each next beat of the run updates in place — `facts.beats` (how
 * many, from 2) and `facts.lastAt` (the latest) — instead of inserting a row with three index
 * entries. No indexed column of `activity` changes, so the update is HOT. A run goes on while its
 * row is the issue's latest activity, of the same lease (fence) and by the same person, key and
 * runtime, with no detail (a recovery's row has some); anything else starts a new run. The
 * timeline, the export and the meter read a run as its beats (activity-text.ts, usage).
 *
 * These are the steps' one home: CTEs `last`, `extended` and `logged` of the caller's statement,
 * after its CTE `renewed` (the renewed issue's `id` and `fence`; no row, nothing logged).
 * heartbeat-held.ts puts them after its renewal by token, `logBeat` after the general path's.
 * db/partition-plan.test.ts splices this text into heartbeat-held.ts's to hold its copy of the
 * statement: keep it one sql`…` with no template inside.
 */
export function beatSteps(principal: Principal, now: Date): SQL {
  return sql`last as (
            select id, kind, actor_id, key_id, runtime, detail_enc, facts from activity
             where org_id = ${principal.orgId} and issue_id = (select id from renewed)
             order by id desc limit 1
          ), extended as (
            update activity a set facts = jsonb_build_object('fence', l.facts->'fence', 'beats', coalesce((l.facts->>'beats')::int, 1) + 1, 'lastAt', ${now.toISOString()}::text)
              from last l
             where a.org_id = ${principal.orgId} and a.id = l.id and l.kind = 'heartbeat' and l.detail_enc is null
               and l.facts->'fence' = (select to_jsonb(fence) from renewed) and l.actor_id is not distinct from ${principal.userId}
               and l.key_id is not distinct from ${principal.keyId} and l.runtime is not distinct from ${principal.runtime}
            returning a.id
          ), logged as (
            insert into activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
            select ${principal.orgId}, id, 'heartbeat', ${principal.userId}, ${principal.keyId}, ${principal.runtime}, jsonb_build_object('fence', fence), ${now.toISOString()}::timestamptz
              from renewed where not exists (select 1 from extended)
          )`;
}

/**
 * The general path's log of a beat (`renewByHeartbeat`, lease.ts): the issue it renewed as
 * `renewed`, then `beatSteps`. Call inside the renewal's transaction, the row locked.
 * heartbeat-held.test.ts holds it and heartbeat-held.ts to the same rows.
 */
export async function logBeat(tx: Db, principal: Principal, issue: { id: string; fence: number }, now: Date): Promise<void> {
  await query(
    tx,
    sql`with renewed as (
            select ${issue.id}::text as id, ${issue.fence}::int as fence
          ), ${beatSteps(principal, now)}
          select 1`,
  );
}
