import { and, eq, lt } from "drizzle-orm";
import type { Db } from "../../../db/client.ts";
import { linearImportRuns, type LinearImportPhase } from "../../../db/schema/index.ts";
import type { Services } from "../../context.ts";

/** A fetcher silent this long died with its process, and the key with it: its run cannot go on. */
export const FETCH_STALE_MS = 15 * 60_000;

export type RunRow = typeof linearImportRuns.$inferSelect;

/** Marks the org's run failed when its fetcher has gone quiet (its process crashed): the key is gone, so the owner starts again. */
export async function expireStaleFetch(tx: Db, orgId: string, now: Date): Promise<void> {
  await tx
    .update(linearImportRuns)
    .set({ phase: "failed", error: "FETCH_INTERRUPTED", finishedAt: now, updatedAt: now })
    .where(and(eq(linearImportRuns.orgId, orgId), eq(linearImportRuns.phase, "fetching"), lt(linearImportRuns.fetchHeartbeatAt, new Date(now.getTime() - FETCH_STALE_MS))));
}

/** Progress on the live stream the Dash listens to: ids and counts, never content. */
export async function publishProgress(services: Pick<Services, "events">, tx: Db, run: Pick<RunRow, "id" | "orgId" | "done" | "total" | "error"> & { phase: LinearImportPhase }) {
  await services.events.publish(tx, { orgId: run.orgId, kind: "import.progress", runId: run.id, source: "linear", phase: run.phase, done: run.done, total: run.total, error: run.error });
}

export const lockRun = async (tx: Db, runId: string) =>
  (await tx.select().from(linearImportRuns).where(eq(linearImportRuns.id, runId)).for("update"))[0] ?? null;
