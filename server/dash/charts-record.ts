import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Services } from "../context.ts";
import { isOpen } from "../../db/schema/dispatch.ts";
import { orgNotFrozen } from "../orgs/freeze.ts";

/**
 * Writers of fleet_hours (decision 027): the queue depth sample, run by the `sweep.fleet-sample`
 * sweep. The count of fenced writes refused as stale is bumped by the refusal itself, whatever the
 * door (server/issues/stale-refusals.ts).
 */
const KEEP = sql`interval '8 days'`;

/**
 * Every project's open issues by status into the current hour's row (a later sample in the same
 * hour overwrites it), projects with nothing open included as zeros; rows older than eight days
 * go. Per project, so a member scoped to some (decision 042) is shown the sum of theirs. One
 * grouped scan of the open issues; measured in decision 027.
 */
export async function sampleQueueDepth(services: Services): Promise<Record<string, number>> {
  const hour = new Date(Math.floor(services.clock.now().getTime() / 3_600_000) * 3_600_000).toISOString();
  const [row] = await query<{ projects: number; pruned: number }>(
    services.db,
    sql`with sampled as (
          insert into fleet_hours (org_id, project_id, hour, depth)
          select p.org_id, p.id, ${hour}::timestamptz, jsonb_build_object(
                   'ready', count(*) filter (where i.status = 'todo' and i.open_blocker_count = 0),
                   'blocked', count(*) filter (where i.status = 'blocked' or (i.status = 'todo' and i.open_blocker_count > 0)),
                   'doing', count(*) filter (where i.status = 'doing'),
                   'review', count(*) filter (where i.status = 'review'))
          from projects p left join issues i on i.project_id = p.id and ${isOpen(sql`i.status`)}
          -- A frozen org's hour is sampled on the stack it moves to (decision 110).
          where ${orgNotFrozen(sql`p.org_id`)}
          group by p.org_id, p.id
          on conflict (org_id, hour, project_id) do update set depth = excluded.depth
          returning 1
        ), pruned as (delete from fleet_hours where hour < ${hour}::timestamptz - ${KEEP}
                        and ${orgNotFrozen(sql`fleet_hours.org_id`)} returning 1)
        select (select count(*)::int from sampled) as projects, (select count(*)::int from pruned) as pruned`,
  );
  return { projects: Number(row?.projects ?? 0), pruned: Number(row?.pruned ?? 0) };
}
