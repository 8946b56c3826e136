import { bigint, integer, pgTable, text } from "drizzle-orm/pg-core";

/**
 * Issues by status across every org, kept current so a /metrics scrape reads a few rows instead
 * of counting every issue (decision 077). The exact count is this table plus the changes not yet
 * folded into it (`issue_count_changes`); `retasc_issue_counts_fold()` folds them, and
 * `retasc_issue_counts_reset()` recounts from scratch.
 */
export const issueStatusCounts = pgTable("issue_status_counts", {
  status: text("status").primaryKey(),
  n: bigint("n", { mode: "number" }).notNull().default(0),
});

/**
 * What changed since the last fold, appended by triggers on `issues` in the transaction of the
 * change: one row per status change (`from_status` to `to_status`), per inserting statement
 * (`from_status` null) and per deleting statement (`to_status` null). Appends take no lock a
 * concurrent claim waits on, so it has no key; the fold deletes what it sums.
 */
export const issueCountChanges = pgTable("issue_count_changes", {
  fromStatus: text("from_status"),
  toStatus: text("to_status"),
  n: integer("n").notNull(),
});
