import { sql } from "drizzle-orm";
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
 * The same statement, past its `renewed` step, is in heartbeat-held.ts; heartbeat-held.test.ts
 * holds the two paths to the same rows. Call inside the renewal's transaction, the row locked.
 */
export async function logBeat(tx: Db, principal: Principal, issue: { id: string; fence: number }, now: Date): Promise<void> {
  await query(
    tx,
    sql`with renewed as (
            select ${issue.id}::text as id, ${issue.fence}::int as fence
          ), last as (
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
          )
          select 1`,
  );
}
