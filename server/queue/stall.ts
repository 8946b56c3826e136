import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";

/**
 * Whether live claims are making progress (issue 35): when each last did (its claim, a
 * checkpoint, a comment, or a write to the issue; heartbeats and a session's renewals touch only
 * the lease), and whether that is longer ago than its project's stall window. One rule for every
 * door that says so: `check_claim`, the Fleet and the stall sweep (stall-sweep.ts).
 */
export interface ClaimProgress {
  lastProgressAt: string;
  stalled: boolean;
}

export async function claimProgress(ctx: Pick<Ctx, "db" | "clock">, issueIds: string[]): Promise<Map<string, ClaimProgress>> {
  if (issueIds.length === 0) return new Map();
  const now = ctx.clock.now().getTime();
  const rows = await query<{ id: string; at: string | Date; stall_minutes: number }>(
    ctx.db,
    sql`select i.id,
               greatest(l.claimed_at, i.updated_at,
                        (select max(c.created_at) from checkpoints c where c.issue_id = i.id),
                        (select max(m.created_at) from comments m where m.issue_id = i.id)) as at,
               p.stall_minutes
        from issues i join leases l on l.id = i.lease_id join projects p on p.id = i.project_id
        where i.id in ${issueIds}`,
  );
  return new Map(
    rows.map((row) => {
      const at = new Date(row.at);
      return [row.id, { lastProgressAt: at.toISOString(), stalled: now - at.getTime() >= Number(row.stall_minutes) * 60_000 }];
    }),
  );
}
