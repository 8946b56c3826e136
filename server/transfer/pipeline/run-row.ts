import { and, eq, inArray, lt, sql } from "drizzle-orm";
import type { Db } from "../../../db/client.ts";
import { importStagedFiles, linearImportPages, linearImportRuns, type LinearImportPhase } from "../../../db/schema/index.ts";
import type { Services } from "../../context.ts";
import { transactionWithNotices } from "../../events/index.ts";

/**
 * A fetcher silent this long died with its process, and the key with it: its run cannot go on.
 * Its process beats every `IMPORT_FETCH_HEARTBEAT_MS` however slow the tracker (./start.ts), so
 * six missed beats leave no doubt, and the org's import slot is free again within a minute.
 */
export const fetchStaleMs = (config: Pick<Services["config"], "IMPORT_FETCH_HEARTBEAT_MS">) => config.IMPORT_FETCH_HEARTBEAT_MS * 6;

/**
 * Marks the org's run failed when the outbox has given up on its `linear.apply` job in a way
 * the job itself could not report (a worker that died on every attempt, a job failed in the
 * queue): without this the run would stay `applying` and hold the org's import slot for ever.
 */
export async function expireFailedApply(services: Pick<Services, "events">, tx: Db, orgId: string, now: Date): Promise<void> {
  const failed = await tx
    .update(linearImportRuns)
    .set({ phase: "failed", error: "APPLY_FAILED", finishedAt: now, updatedAt: now })
    .where(
      and(
        eq(linearImportRuns.orgId, orgId),
        inArray(linearImportRuns.phase, ["applying", "linking"]),
        sql`exists (select 1 from outbox o where o.job = 'linear.apply' and o.payload->>'runId' = ${linearImportRuns.id} and o.failed_at is not null)`,
      ),
    )
    .returning();
  for (const run of failed) {
    await dropStaging(tx, run.id);
    await publishProgress(services, tx, { ...run, phase: "failed" });
  }
}

export type RunRow = typeof linearImportRuns.$inferSelect;

/**
 * Marks the org's run failed when its fetcher has gone quiet (its process died): the key is gone,
 * so the owner starts again, and a re-import reconciles what was applied. The stream hears it.
 */
export async function expireStaleFetch(services: Pick<Services, "events" | "config" | "clock">, db: Db, orgId: string): Promise<void> {
  const now = services.clock.now();
  const silent = and(eq(linearImportRuns.orgId, orgId), eq(linearImportRuns.phase, "fetching"), lt(linearImportRuns.fetchHeartbeatAt, new Date(now.getTime() - fetchStaleMs(services.config))));
  // Every status read asks: one cheap read, and a transaction only for a run to let go.
  const [candidate] = await db.select({ id: linearImportRuns.id }).from(linearImportRuns).where(silent).limit(1);
  if (!candidate) return;
  await transactionWithNotices(db, async (tx) => {
    const stale = await tx.update(linearImportRuns).set({ phase: "failed", error: "FETCH_INTERRUPTED", finishedAt: now, updatedAt: now }).where(silent).returning();
    for (const run of stale) {
      await dropStaging(tx, run.id);
      await publishProgress(services, tx, { ...run, phase: "failed" });
    }
  });
}

/** Progress on the live stream the Dash listens to: ids and counts, never content. */
export async function publishProgress(services: Pick<Services, "events">, tx: Db, run: Pick<RunRow, "id" | "orgId" | "source" | "done" | "total" | "error"> & { phase: LinearImportPhase; waitSeconds?: number }) {
  await services.events.publish(tx, { orgId: run.orgId, kind: "import.progress", runId: run.id, source: run.source, phase: run.phase, done: run.done, total: run.total, error: run.error, ...(run.waitSeconds ? { waitSeconds: run.waitSeconds } : {}) });
}

export const lockRun = async (tx: Db, runId: string) =>
  (await tx.select().from(linearImportRuns).where(eq(linearImportRuns.id, runId)).for("update"))[0] ?? null;

/** A run's staging (pages and files) dropped: when it ends, either way. */
export async function dropStaging(tx: Db, runId: string): Promise<void> {
  await tx.delete(linearImportPages).where(eq(linearImportPages.runId, runId));
  await tx.delete(importStagedFiles).where(eq(importStagedFiles.runId, runId));
}
