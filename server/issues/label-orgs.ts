import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Services } from "../context.ts";

/** Rows filled per statement, each its own transaction, and statements per tick. */
export const LABEL_ORGS_BATCH = 5_000;
export const LABEL_ORGS_MAX_BATCHES = 100;

/**
 * sweep.issue-labels-org (decision 099): fills `issue_labels.org_id` in the rows written before
 * migration 0071 gave the table its org, from their issues, in bounded batches read through
 * `issue_labels_org_missing_idx` (which holds only the rows left). Rows another transaction holds
 * are skipped until a later batch. Once a deployment's rows are all filled (`remaining` 0), a later
 * migration validates `issue_labels_org_id_present` and makes the column NOT NULL.
 */
export async function backfillLabelOrgs(
  services: Pick<Services, "db">,
  limits: { batch?: number; maxBatches?: number } = {},
): Promise<{ filled: number; batches: number }> {
  const batch = limits.batch ?? LABEL_ORGS_BATCH;
  const maxBatches = limits.maxBatches ?? LABEL_ORGS_MAX_BATCHES;
  let filled = 0;
  let batches = 0;
  while (batches < maxBatches) {
    const [row] = await query<{ filled: number }>(
      services.db,
      sql`with batch as (select il.issue_id, il.label_id from issue_labels il where il.org_id is null
                          limit ${batch} for update skip locked),
               done as (update issue_labels il set org_id = i.org_id
                          from batch b join issues i on i.id = b.issue_id
                         where il.issue_id = b.issue_id and il.label_id = b.label_id
                        returning 1)
          select count(*)::int as filled from done`,
    );
    batches += 1;
    const n = Number(row?.filled ?? 0);
    filled += n;
    if (n < batch) break;
  }
  return { filled, batches };
}
