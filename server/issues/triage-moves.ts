import { eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { issues } from "../../db/schema/index.ts";
import { rankingColumns, reviewClockOf, reviewSinceAfter } from "./levels.ts";
import { lockOrgGraph, rerank } from "./ranking.ts";
import { isTerminal } from "./store.ts";

/**
 * An issue's triage moves (a person accepts outside work; intake puts an edited item back in
 * triage, or lets it out again when the text returns to what a person signed): `triage` and
 * `extra` are written, and the review clock follows the one rule (`reviewSinceAfter`): a review
 * awaiting triage has none, one let out starts it. When that moves the issue's own level, its
 * ranking columns are rewritten and what it gates re-ranked, under the org's graph lock (taken
 * here, before the row's lock, when the issue is in review; callers that lock the row themselves
 * take the graph lock first).
 */
export async function moveTriage(tx: Db, orgId: string, issueId: string, triage: "pending" | "accepted", now: Date, extra: Partial<typeof issues.$inferInsert> = {}): Promise<void> {
  const [peek] = await tx.select({ status: issues.status }).from(issues).where(eq(issues.id, issueId));
  if (peek?.status === "review") await lockOrgGraph(tx, orgId);
  const [row] = await tx.select().from(issues).where(eq(issues.id, issueId)).for("update");
  if (!row) return;
  const patch: Partial<typeof issues.$inferInsert> = { ...extra, triage, updatedAt: now };
  const reviewSince = reviewSinceAfter(row, { status: row.status, triage }, now);
  let moved = false;
  if (reviewSince?.getTime() !== row.reviewSince?.getTime()) {
    patch.reviewSince = reviewSince;
    if (!isTerminal(row.status)) {
      const ranking = rankingColumns(row.priority, row.dueAt, row.dueSetAt ?? row.createdAt, false, now, reviewClockOf({ status: row.status, reviewSince }));
      Object.assign(patch, ranking);
      moved = ranking.ownLevel !== row.ownLevel;
    }
  }
  await tx.update(issues).set(patch).where(eq(issues.id, row.id));
  if (moved) await rerank(tx, [row.id]);
}
