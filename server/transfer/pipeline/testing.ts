import { eq, sql } from "drizzle-orm";
import { query } from "../../../db/client.ts";
import { linearImportRuns } from "../../../db/schema/index.ts";
import type { Ctx, Services } from "../../context.ts";
import { waitFor } from "../../testing/wait.ts";
import { applyImportRun } from "./apply-run.ts";
import { importStatus, runCounts } from "./status.ts";
import { beginImport, type RunTarget } from "./start.ts";
import type { SourceIssue, SourceReader } from "./stream.ts";

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

export const person = (n: number) => ({ id: `p${n}`, name: `Person ${n}`, email: `person${n}@source.example` });
/** `count` source issues of every kind the pipeline carries (comments in a thread, a link, a relation, people, labels), numbered `prefix`-1 on. */
export function sourceIssues(count: number, prefix: string): SourceIssue[] {
  return Array.from({ length: count }, (_, n) => {
    const at = (m: number) => new Date(Date.UTC(2026, 0, 1 + n, 9, m)).toISOString();
    const id = `src-${n + 1}`;
    return {
      id,
      number: n + 1,
      key: `${prefix}-${n + 1}`,
      title: `Issue ${n + 1}`,
      body: `Body **${n + 1}**`,
      status: n % 3 === 0 ? "done" : "todo",
      priority: n % 5,
      estimate: null,
      dueDate: n % 4 === 0 ? "2026-03-01" : null,
      createdAt: at(0),
      updatedAt: at(30),
      startedAt: null,
      completedAt: n % 3 === 0 ? at(20) : null,
      canceledAt: null,
      parentId: n > 0 && n % 10 === 0 ? "src-1" : null,
      creator: person(n % 4),
      assignee: n % 2 ? person((n + 1) % 4) : null,
      labels: [{ id: `l${n % 3}`, name: `label-${n % 3}`, color: "#aabbcc" }],
      // Two comments in the same millisecond: a restored org's comments are matched in turn.
      comments: [
        { id: `${id}-c1`, body: "First", createdAt: at(1), retractedAt: null, parentId: null, author: person(1) },
        { id: `${id}-c2`, body: "Reply", createdAt: at(2), retractedAt: null, parentId: `${id}-c1`, author: person(2) },
        { id: `${id}-c3`, body: "Same time", createdAt: at(2), retractedAt: at(5), parentId: null, author: null },
      ],
      attachments: [{ id: `${id}-a1`, title: "Spec", url: `https://docs.example/${n}`, createdAt: at(3), author: person(3) }],
      relations: n > 1 ? [{ id: `${id}-r1`, type: "blocks", targetId: `src-${n}`, createdAt: at(4) }] : [],
    };
  });
}
