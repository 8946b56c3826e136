import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Services } from "../context.ts";

/** Rows one statement looks at: each batch is its own short transaction. */
export const ACTIVITY_PRUNE_BATCH = 5_000;
/** Batches one run deletes at most; the next run goes on from the oldest row left. */
export const ACTIVITY_PRUNE_MAX_BATCHES = 100;

/**
 * Deletes the activity rows older than ACTIVITY_RETENTION_DAYS (decision 077). It walks the log
 * in the order rows were written (the primary key, so no index is added to the table every write
 * appends to) and stops at the first row within the retention: rows written later are younger,
 * except an import's older history, which goes when the walk reaches it.
 */
export async function pruneActivity(
  services: Pick<Services, "db" | "clock" | "config">,
  limits: { batch?: number; maxBatches?: number } = {},
): Promise<{ deleted: number; batches: number }> {
  const days = services.config.ACTIVITY_RETENTION_DAYS;
  if (days === 0) return { deleted: 0, batches: 0 };
  const batch = limits.batch ?? ACTIVITY_PRUNE_BATCH;
  const maxBatches = limits.maxBatches ?? ACTIVITY_PRUNE_MAX_BATCHES;
  const cutoff = new Date(services.clock.now().getTime() - days * 86_400_000).toISOString();
  let deleted = 0;
  let batches = 0;
  let after = 0;
  while (batches < maxBatches) {
    const [row] = await query<{ deleted: number; last: string | null; reached: boolean; seen: number }>(
      services.db,
      sql`with batch as (select id, created_at from activity where id > ${after} order by id limit ${batch}),
               kept as (select min(id) as id from batch where created_at >= ${cutoff}::timestamptz),
               gone as (delete from activity a using batch b
                        where a.id = b.id and ((select id from kept) is null or b.id < (select id from kept))
                        returning a.id)
          select (select count(*) from gone)::int as deleted, (select max(id) from batch)::text as last,
                 (select id from kept) is not null as reached, (select count(*) from batch)::int as seen`,
    );
    batches += 1;
    deleted += Number(row?.deleted ?? 0);
    if (!row || row.reached || Number(row.seen) < batch || row.last === null) break;
    after = Number(row.last);
  }
  return { deleted, batches };
}
