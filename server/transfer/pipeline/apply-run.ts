import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { linearImportPages, linearImportRuns } from "../../../db/schema/index.ts";
import type { Services } from "../../context.ts";
import { query } from "../../../db/client.ts";
import { projectNamedBy } from "../../orgs/index.ts";
import { applyPage } from "./apply.ts";
import { noCounts, type ApplyCounts } from "./apply-rows.ts";
import type { LinkReason } from "./files.ts";
import type { SourceIssue } from "./stream.ts";
import { GhostBook } from "./ghosts.ts";
import { linkAll } from "./link.ts";
import { dropStaging, lockRun, publishProgress } from "./run-row.ts";
import { transactionWithNotices } from "../../events/index.ts";

/**
 * Ends a run that cannot finish as `failed` with a code: its staging dropped and the progress
 * published, so the page says why and the org's one import slot is free again. A run already
 * ended is left as it is.
 */
export async function failImportRun(services: Services, runId: string, code: string): Promise<void> {
  await transactionWithNotices(services.db, async (tx) => {
    const now = services.clock.now();
    const [run] = await tx
      .update(linearImportRuns)
      .set({ phase: "failed", error: code, finishedAt: now, updatedAt: now })
      .where(and(eq(linearImportRuns.id, runId), inArray(linearImportRuns.phase, ["fetching", "applying", "linking"])))
      .returning();
    if (!run) return;
    await dropStaging(tx, runId);
    await publishProgress(services, tx, { ...run, phase: "failed" });
  });
}

/** How often an apply that has caught up with the fetch looks for the next page, and how long it waits for one before leaving the rest to the job the last page enqueues. */
const CAUGHT_UP_POLL_MS = 50;
const CAUGHT_UP_GIVE_UP_MS = 10_000;

/**
 * The outbox job's work: the staged pages applied in order, each in one transaction with the
 * run's `pages_applied`, so a worker killed anywhere resumes at the first page not committed
 * and the result is the same as a run never interrupted; then the linking pass, and the
 * staging is dropped. Pages are applied while later ones are still fetched (decision 084): an
 * apply that has caught up waits a little for the next; the fetcher enqueues the job again with
 * the last page. Appliers of one run take turns on an advisory lock, not the run's row, which the
 * fetcher locks to stage each page. A second delivery of the job finds the work done and does nothing.
 */
export async function applyImportRun(services: Services, runId: string) {
  const { db } = services;
  let waitedMs = 0;
  for (;;) {
    const step = await transactionWithNotices(db, async (tx) => {
      // A page's commit does not wait for the WAL flush (decision 100): its input is staged durably,
      // and a crash that loses it loses every later commit too, so the run resumes at that page.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`import-apply:${runId}`})), set_config('synchronous_commit', 'off', true)`);
      const [run] = await tx.select().from(linearImportRuns).where(eq(linearImportRuns.id, runId));
      if (!run || (run.phase !== "fetching" && run.phase !== "applying" && run.phase !== "linking")) return "finished" as const;
      const cipher = await services.keyring.forOrg(tx, run.orgId);
      const now = services.clock.now();
      const counts: ApplyCounts & { ghosts?: number } = { ...noCounts(), ...(run.counts ? JSON.parse(run.counts) : {}) };
      // The page, the project's prefix and the org's time zone in one statement (decision 084's statements per page, issue 29).
      // KEY SHARE: a rename of the prefix waits for this page, whose new issues are named with it (decision 089); creates do not.
      // The source's key may be an old prefix of the project (renamed since): its numbers are kept, under the prefix now.
      const [project] = await query<{ prefix: string; keyed: boolean; time_zone: string; payload_enc: string | null }>(
        tx,
        sql`select projects.prefix, ${projectNamedBy(run.orgId, run.teamKey)} as keyed, o.time_zone, pg.payload_enc
              from projects join orgs o on o.id = projects.org_id
              left join linear_import_pages pg on pg.run_id = ${runId} and pg.seq = ${run.pagesApplied + 1}
             where projects.id = ${run.projectId}
             for key share of projects`,
      );
      const keepNumbers = run.teamKey !== "" && project!.keyed;
      const page = project!.payload_enc === null ? null : { payloadEnc: project!.payload_enc };
      if (page) {
        const issues = JSON.parse(cipher.decrypt(page.payloadEnc)) as SourceIssue[];
        const ghosts = new GhostBook(tx, run.orgId, cipher, run.source);
        const scope = { tx, runId, cipher, orgId: run.orgId, projectId: run.projectId, prefix: project!.prefix, keepNumbers, source: run.source, timeZone: project!.time_zone, ghosts, now };
        const got = await applyPage(scope, issues);
        for (const k of ["created", "updated", "unchanged", "comments", "filesCopied", "linksKept"] as const) counts[k] += got[k];
        for (const [reason, n] of Object.entries(got.linkReasons) as [LinkReason, number][]) counts.linkReasons[reason] = (counts.linkReasons[reason] ?? 0) + n;
        counts.ghosts = (counts.ghosts ?? 0) + ghosts.made;
        // While the fetch goes on the bar counts what is fetched (./start.ts); the fetcher's last page sets it to what is applied by then.
        const [after] = await tx
          .update(linearImportRuns)
          .set({ pagesApplied: run.pagesApplied + 1, done: sql`case when ${linearImportRuns.phase} = 'fetching' then ${linearImportRuns.done} else ${linearImportRuns.done} + ${issues.length} end`, counts: JSON.stringify(counts), updatedAt: now })
          .where(and(eq(linearImportRuns.id, runId), inArray(linearImportRuns.phase, ["fetching", "applying", "linking"])))
          .returning();
        if (after && after.phase !== "fetching") await publishProgress(services, tx, after);
        return after ? ("page" as const) : ("finished" as const);
      }
      if (run.phase === "fetching") return "caught up" as const;
      // Every page is in: the run is locked for the linking pass and its end.
      if ((await lockRun(tx, runId))?.phase !== run.phase) return "finished" as const;
      const pages = await tx.select({ payloadEnc: linearImportPages.payloadEnc }).from(linearImportPages).where(eq(linearImportPages.runId, runId)).orderBy(asc(linearImportPages.seq));
      const all = pages.flatMap((p) => JSON.parse(cipher.decrypt(p.payloadEnc)) as SourceIssue[]);
      await linkAll(tx, run.orgId, run.projectId, all, keepNumbers);
      await tx.update(linearImportRuns).set({ phase: "done", finishedAt: now, updatedAt: now }).where(eq(linearImportRuns.id, runId));
      await dropStaging(tx, runId);
      await publishProgress(services, tx, { ...run, phase: "done", done: run.done });
      return "finished" as const;
    }).catch(async (error: unknown) => {
      // A source's number already taken here by an issue not from it: no retry changes that, so
      // the run fails with a code (freeing the org for another import) instead of retrying for ever.
      const e = error as { code?: string; cause?: { code?: string } };
      if ((e.code ?? e.cause?.code) !== "23505") throw error;
      await failImportRun(services, runId, "NUMBER_TAKEN");
      return "finished" as const;
    });
    if (step === "finished") break;
    if (step === "page") waitedMs = 0;
    else {
      if (waitedMs >= CAUGHT_UP_GIVE_UP_MS) break;
      await new Promise((resolve) => setTimeout(resolve, CAUGHT_UP_POLL_MS));
      waitedMs += CAUGHT_UP_POLL_MS;
    }
  }
  const [run] = await db.select().from(linearImportRuns).where(eq(linearImportRuns.id, runId));
  return { runId, phase: run?.phase ?? null };
}
