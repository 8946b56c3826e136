import { eq, sql } from "drizzle-orm";
import { query } from "../../../db/client.ts";
import { linearImportRuns } from "../../../db/schema/index.ts";
import type { Ctx, Services } from "../../context.ts";
import { waitFor } from "../../testing/wait.ts";
import { applyImportRun } from "./apply-run.ts";
import { importStatus, runCounts } from "./status.ts";
import { beginImport, type RunTarget } from "./start.ts";
import type { SourceReader } from "./stream.ts";

/** A run to its end in this process: staged by its reader, then applied as the `linear.apply` job applies it. */
export async function importToEnd(ctx: Ctx, reader: SourceReader, target: RunTarget) {
  const { runId } = await beginImport(ctx, reader, target);
  const staged = await waitFor(
    async () => {
      const [run] = await ctx.db.select().from(linearImportRuns).where(eq(linearImportRuns.id, runId));
      return run && run.phase !== "fetching" ? run : null;
    },
    120_000,
    `import ${runId} to be staged`,
  );
  if (staged.phase === "applying") await applyImportRun(ctx, runId);
  const [run] = await ctx.db.select().from(linearImportRuns).where(eq(linearImportRuns.id, runId));
  return { ...run!, ...runCounts(run!.counts) };
}

/**
 * A run a door started, to its end: staged by this process (which holds the credential), then
 * applied by `services` as the `linear.apply` job applies it; answered as `ctx` reads its status.
 */
export async function finishRun(services: Services, ctx: Ctx, runId: string, stagedWithinMs = 120_000) {
  const staged = await waitFor(async () => {
    const s = await importStatus(ctx, { runId });
    return s.phase !== "fetching" ? s : null;
  }, stagedWithinMs, `run ${runId} staged`);
  if (staged.phase === "applying") await applyImportRun(services, runId);
  return importStatus(ctx, { runId });
}

/** Each imported issue's identifier here by its source id (`linear_links`), for sources whose numbers are ours. */
export async function identifiersBySourceId(ctx: Pick<Ctx, "db">, orgId: string): Promise<Map<string, string>> {
  const rows = await query<{ source_id: string; identifier: string }>(ctx.db, sql`select l.linear_id as source_id, i.identifier from linear_links l join issues i on i.id = l.retasc_id where l.org_id = ${orgId} and l.kind = 'issue'`);
  return new Map(rows.map((r) => [r.source_id, r.identifier]));
}
