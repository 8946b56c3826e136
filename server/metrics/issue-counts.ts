import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";

/**
 * Issues by status, every org, for the `retasc_issues` gauge (decision 077): the counts the
 * triggers on `issues` keep (migration 0045) plus the changes not yet folded into them, so a
 * scrape reads a few rows, not every issue. Exact at the read's snapshot.
 */
export async function readIssueCounts(db: Db): Promise<[string, number][]> {
  const rows = await query<{ status: string; n: string | number }>(db, sql`select status, n from retasc_issue_counts() where n <> 0`);
  return rows.map((r) => [r.status, Number(r.n)]);
}

/** Changes one fold statement sums: each is its own short transaction. */
export const ISSUE_COUNTS_FOLD_BATCH = 50_000;
const MAX_FOLDS = 20;

/**
 * Folds the changes the triggers appended into the counts, so what a scrape sums stays what a
 * few seconds of writes appended (sweep.issue-counts). Bounded: a backlog left while no runner
 * ran is folded over the next ticks.
 */
export async function foldIssueCounts(services: { db: Db }): Promise<Record<string, number>> {
  let folded = 0;
  for (let i = 0; i < MAX_FOLDS; i++) {
    const [row] = await query<{ n: number }>(services.db, sql`select retasc_issue_counts_fold(${ISSUE_COUNTS_FOLD_BATCH}::int) as n`);
    const n = Number(row?.n ?? 0);
    folded += n;
    if (n < ISSUE_COUNTS_FOLD_BATCH) break;
  }
  return { folded };
}
