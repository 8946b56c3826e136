import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Services } from "../context.ts";
import type { Ctx } from "../context.ts";
import { leaseFields } from "../queue/claim.ts";

/**
 * A queue with held work at its head, for the plan test and bench/picks.ts (decision 076):
 * `count` todo issues ranked as the app ranks them (levels 0-4, one in ten with a deadline),
 * filled in one statement.
 */
export async function fillQueue(services: Services, orgId: string, projectId: string, prefix: string, count: number): Promise<void> {
  const title = (await services.keyring.forOrg(services.db, orgId)).encrypt("Queued issue");
  await services.db.execute(sql`
    insert into issues (id, org_id, project_id, number, identifier, title_enc, work, status, priority, due_at,
                        own_level, effective_level, effective_due_at, open_blocker_count, sla_state, created_at, updated_at)
    select ${projectId} || '-' || n, ${orgId}, ${projectId}, n, ${prefix} || '-' || n, ${title}, true, 'todo', prio,
           due, level, level, due, 0, 'none', now() - (n || ' seconds')::interval, now()
    from generate_series(1, ${count}::int) n,
         lateral (select ((n * 7) % 5)::smallint as prio, case when n % 10 = 3 then now() + ((30 + n % 60) || ' days')::interval end as due) v,
         lateral (select (case when prio = 0 then 0 else 5 - prio end)::smallint as level) l`);
  await services.db.execute(sql`update projects set next_number = ${count + 1} where id = ${projectId}`);
}

/**
 * Holds the project's `count` most urgent todo issues under live leases of nobody's key until
 * `until`, freeing those held before; then vacuums, as autovacuum would have.
 */
export async function holdHead(services: Services, projectId: string, count: number, until: Date): Promise<void> {
  await services.db.execute(sql`update issues set status = 'todo', lease_id = null, lease_token_hash = null, lease_expires_at = null
                                where project_id = ${projectId} and lease_id like 'held-%'`);
  await services.db.execute(sql`
    update issues set status = 'doing', lease_id = 'held-' || id, lease_token_hash = 'held', lease_expires_at = ${until.toISOString()}::timestamptz
    where id in (select id from issues where project_id = ${projectId} and status = 'todo'
                 order by effective_level desc, effective_due_at asc nulls last, created_at, number limit ${count})`);
  await services.db.execute(sql`vacuum analyze issues`);
}

class Rollback extends Error {}

/** next_issue's statement for `ctx` under EXPLAIN (ANALYZE, BUFFERS), rolled back: its time (ms) and shared buffers. */
export async function explainPick(services: Services, ctx: Ctx): Promise<{ ms: number; buffers: number }> {
  const p = ctx.principal;
  const calls = JSON.stringify([
    { orgId: p.orgId, projectId: p.projectId, projectIds: p.projectIds, allLanes: false, checkSla: true, cap: 1_000, ...leaseFields(ctx, ctx.clock.now(), "rtclm_explain") },
  ]);
  let result = { ms: 0, buffers: 0 };
  await services.db
    .transaction(async (tx) => {
      const [row] = await query<{ "QUERY PLAN": [{ "Execution Time": number; Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number } }] }>(
        tx,
        sql`explain (analyze, buffers, format json) select retasc_next_issues(${calls}::jsonb)`,
      );
      const [plan] = row!["QUERY PLAN"];
      result = { ms: plan["Execution Time"], buffers: plan.Plan["Shared Hit Blocks"] + plan.Plan["Shared Read Blocks"] };
      throw new Rollback();
    })
    .catch((error) => {
      if (!(error instanceof Rollback)) throw error;
    });
  return result;
}
