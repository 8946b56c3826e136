import { and, eq, lte } from "drizzle-orm";
import { issues } from "../../db/schema/index.ts";
import type { IssueRow } from "./types.ts";

/**
 * A finish CI has not settled past its project's window reads `stale` (issue 35, decisions 045
 * and 062). This module is the rule's one home, in the issues domain because every read of an
 * issue says it: `verificationNow` says it of one row (every read of an issue, the Fleet, the
 * sweep in server/verification/stale.ts), `pastWindow` is the same test in SQL, to find the rows
 * it may hold for, each of which is then read through `verificationNow`.
 * `verification_stale_at` is set at the finish: the finish plus the window.
 */

/** CI's word on the last finish as it reads now: a pending one past the project's window reads "stale". */
export function verificationNow(row: Pick<IssueRow, "verification" | "verificationStaleAt">, now: Date) {
  if (row.verification === "pending" && row.verificationStaleAt && row.verificationStaleAt.getTime() <= now.getTime()) return "stale" as const;
  return row.verification;
}

/** `verificationNow(row) === "stale"` in SQL: a done issue still pending at `now` past its window. */
export function pastWindow(now: Date) {
  return and(eq(issues.status, "done"), eq(issues.verification, "pending"), lte(issues.verificationStaleAt, now))!;
}
