import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import type { Services } from "../context.ts";
import { isOpen } from "../../db/schema/dispatch.ts";

/**
 * Writers of fleet_hours (decision 027): the queue depth sample, run by the `sweep.fleet-sample`
 * sweep, and the count of fenced writes refused as stale, bumped by the MCP door.
 */
const KEEP = sql`interval '8 days'`;

/**
 * Every org's open issues by status into the current hour's row (a later sample in the same hour
 * overwrites it), orgs with nothing open included as zeros; rows older than eight days go.
 * One grouped scan of the open issues (issues_org_status_idx); measured in decision 027.
 */
export async function sampleQueueDepth(services: Services): Promise<Record<string, number>> {
  const hour = new Date(Math.floor(services.clock.now().getTime() / 3_600_000) * 3_600_000).toISOString();
  const [row] = await query<{ orgs: number; pruned: number }>(
    services.db,
    sql`with sampled as (
          insert into fleet_hours (org_id, hour, depth)
          select o.id, ${hour}::timestamptz, jsonb_build_object(
                   'ready', count(*) filter (where i.status = 'todo' and i.open_blocker_count = 0),
                   'blocked', count(*) filter (where i.status = 'blocked' or (i.status = 'todo' and i.open_blocker_count > 0)),
                   'doing', count(*) filter (where i.status = 'doing'),
                   'review', count(*) filter (where i.status = 'review'))
          from orgs o left join issues i on i.org_id = o.id and ${isOpen(sql`i.status`)}
          group by o.id
          on conflict (org_id, hour) do update set depth = excluded.depth
          returning 1
        ), pruned as (delete from fleet_hours where hour < ${hour}::timestamptz - ${KEEP} returning 1)
        select (select count(*)::int from sampled) as orgs, (select count(*)::int from pruned) as pruned`,
  );
  return { orgs: Number(row?.orgs ?? 0), pruned: Number(row?.pruned ?? 0) };
}

/** One more stale write refused in this org this hour. */
export async function recordStaleRefusal(db: Db, orgId: string, now: Date): Promise<void> {
  const hour = new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000).toISOString();
  await query(
    db,
    sql`insert into fleet_hours (org_id, hour, stale_refused) values (${orgId}, ${hour}::timestamptz, 1)
        on conflict (org_id, hour) do update set stale_refused = fleet_hours.stale_refused + 1`,
  );
}
