import { eq } from "drizzle-orm";
import { linearImportRuns } from "../../../db/schema/index.ts";
import type { Ctx } from "../../context.ts";
import { waitFor } from "../../testing/wait.ts";
import { applyImportRun } from "./apply-run.ts";
import { runCounts } from "./status.ts";
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
