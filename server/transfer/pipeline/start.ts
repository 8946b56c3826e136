import { and, eq, sql } from "drizzle-orm";
import { z } from "zod";
import { issueStatuses, linearImportPages, linearImportRuns, projects } from "../../../db/schema/index.ts";
import type { Ctx, Services } from "../../context.ts";
import { DomainError, invalidInput, notFound } from "../../errors.ts";
import { transactionWithNotices } from "../../events/index.ts";
import { enqueue } from "../../outbox/index.ts";
import { actorOf, requireRole } from "../../orgs/access.ts";
import { createProject, newId, prefixSchema, projectNamedBy } from "../../orgs/index.ts";
import { chargeOrgAction } from "../../usage/meter.ts";
import type { MeteredTool } from "../../usage/rate-card.ts";
import { stageFiles } from "./files.ts";
import { keepCredential, type KeptCredential } from "./kept-credentials.ts";
import { dropStaging, expireFailedApply, expireStaleFetch, lockRun, publishProgress } from "./run-row.ts";
import { refuseWhileFrozen } from "../../orgs/freeze.ts";
import type { ReadNotice, SourceReader } from "./stream.ts";

/** Where a run goes: an existing project (by id) or a new one, exactly one of them. */
export const projectTarget = {
  projectId: z.string().trim().min(1).max(200).optional(),
  newProject: z.object({ name: z.string().trim().min(1, "newProject.name is required").max(100) }).optional(),
};
/** The owner's mapping of a source's status and priority names to ours (`mapping` of a source's dry run and start). */
export const sourceMappingInput = z
  .object({
    statuses: z.record(z.string().max(200), z.enum(issueStatuses)).optional(),
    priorities: z.record(z.string().max(200), z.number().int().min(0).max(4)).optional(),
  })
  .optional();
/** The target of a source without a key of its own (Asana, Shortcut, ClickUp): a new project is given its prefix; `emptyName` says what an empty name becomes. */
export const keylessTarget = (emptyName: string) => ({ ...projectTarget, newProject: z.object({ name: z.string().trim().max(100).optional().describe(`empty: ${emptyName}`), prefix: prefixSchema }).optional() });
export const oneProject = [(v: { projectId?: string; newProject?: object }) => Boolean(v.projectId) !== Boolean(v.newProject), { message: "pass projectId or newProject, one of them" }] as const;

/** When each source id of `source` was last imported into the caller's org (finished runs), by source id. */
export async function lastImports(ctx: Ctx, source: string): Promise<(sourceId: string) => string | null> {
  const runs = await ctx.db
    .select({ teamId: linearImportRuns.teamId, finishedAt: linearImportRuns.finishedAt })
    .from(linearImportRuns)
    .where(and(eq(linearImportRuns.orgId, ctx.principal.orgId), eq(linearImportRuns.source, source), eq(linearImportRuns.phase, "done")));
  return (id) => runs.filter((r) => r.teamId === id && r.finishedAt).map((r) => r.finishedAt!.toISOString()).sort().at(-1) ?? null;
}

export interface RunTarget {
  /** What is read: a Linear team's id, a Jira project's key. */
  sourceId: string;
  /** The source's prefix; numbers are kept when the project's prefix is it ("" when the source has none). */
  prefix: string;
  /** The issues the source says it has, for the progress bar until the last page is in. */
  total: number;
  projectId?: string;
  /** A new project: its prefix is the source's, else the one given here. */
  newProject?: { name: string; prefix?: string };
  /** The usage meter's action for this source. */
  action: MeteredTool;
  /** The credential to keep for importing again, when the caller asked (./kept-credentials.ts). */
  keep?: KeptCredential;
}

/**
 * Opens a run of any source (owners and admins) into a new project or an existing one, and
 * starts reading it into encrypted staging in this process; the outbox job `linear.apply` (named
 * before there were other sources) applies the staged pages. A source with a prefix imports only
 * into a project with that prefix, so ENG-123 stays ENG-123; a new project takes the prefix. The
 * run row is the org's one live import (a unique index refuses a second).
 */
export async function beginImport(ctx: Ctx, reader: SourceReader, target: RunTarget) {
  refuseWhileFrozen(ctx.principal);
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "importing");
  const orgId = ctx.principal.orgId;
  const now = ctx.clock.now();
  const runId = newId();
  const prefix = target.prefix.toUpperCase();
  let projectId = target.projectId;
  await transactionWithNotices(ctx.db, async (tx) => {
    await expireStaleFetch(ctx, tx, orgId);
    await expireFailedApply(ctx, tx, orgId, now);
    if (projectId) {
      // The source's key names the project by its prefix now or one it had before a rename (decision 089): ENG-123 is CORE-123 there.
      const [project] = await tx.select({ prefix: projects.prefix, keyed: sql<boolean>`${projectNamedBy(orgId, prefix)}` }).from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId)));
      if (!project) throw notFound(`project ${projectId}`);
      if (prefix && !project.keyed) {
        throw invalidInput(`project ${project.prefix} does not have the source's key ${prefix} as its prefix`, "Import into a new project, or into the one an earlier import of this source made.");
      }
    } else {
      projectId = (await createProject(tx, { orgId, name: target.newProject!.name, prefix: prefix || (target.newProject!.prefix ?? "") })).id;
    }
    try {
      await tx.insert(linearImportRuns).values({ id: runId, orgId, projectId, source: reader.source, teamId: target.sourceId, teamKey: prefix, startedBy: actor.userId, total: target.total, fetchHeartbeatAt: now, createdAt: now, updatedAt: now });
    } catch (error) {
      if (uniqueViolation(error)) throw new DomainError("CONFLICT", "an import is already running in this org", "Wait for it to finish; its status shows its progress.", { reason: "import_running" });
      throw error;
    }
    await chargeOrgAction(tx, ctx, target.action);
    if (target.keep) await keepCredential(tx, await ctx.keyring.forOrg(tx, orgId), { orgId, source: reader.source, sourceId: target.sourceId, keptBy: actor.userId, now }, target.keep);
    await publishProgress(ctx, tx, { id: runId, orgId, source: reader.source, phase: "fetching", done: 0, total: target.total, error: null });
  });
  // The reader (and the credential in it) lives in this promise only; it never throws.
  void stage(ctx, runId, orgId, reader);
  return { runId, projectId: projectId!, total: target.total };
}

/** Issues the apply has taken so far, from the run's counts. */
function appliedOf(counts: string | null): number {
  const c = counts ? (JSON.parse(counts) as { created?: number; updated?: number; unchanged?: number }) : {};
  return (c.created ?? 0) + (c.updated ?? 0) + (c.unchanged ?? 0);
}

function uniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; cause?: { code?: string } };
  return (e.code ?? e.cause?.code) === "23505";
}

/**
 * Page after page into staging, the next page read while this one's files download; the first
 * page's transaction hands the run to the outbox (`linear.apply`), which applies the pages as
 * they are staged while later ones are still read (decision 084), and the last page's hands it
 * over again, so the apply finishes even if that first job has stopped waiting. Never throws: a
 * failure is the run's state.
 */
async function stage(services: Services, runId: string, orgId: string, reader: SourceReader): Promise<void> {
  const cipher = await services.keyring.forOrg(services.db, orgId);
  let cursor: string | null = null;
  const notice: ReadNotice = {
    async waiting(ms) {
      await transactionWithNotices(services.db, async (tx) => {
        const now = services.clock.now();
        const [run] = await tx.update(linearImportRuns).set({ waitUntil: new Date(now.getTime() + ms), fetchHeartbeatAt: now, updatedAt: now }).where(and(eq(linearImportRuns.id, runId), eq(linearImportRuns.phase, "fetching"))).returning();
        if (run) await publishProgress(services, tx, { ...run, phase: "fetching", waitSeconds: Math.ceil(ms / 1000) });
      });
    },
  };
  const beat = heartbeat(services, runId);
  try {
    let reading = reader.readPage(cursor, notice);
    for (;;) {
      const page = await reading;
      if (page.next !== null) {
        reading = reader.readPage(page.next, notice);
        // Awaited on the next turn; a run that stops before then leaves its failure unread.
        reading.catch(() => {});
      }
      await stageFiles(services, cipher, runId, orgId, page.issues, reader.fetchFile);
      const more = page.next !== null;
      const alive = await transactionWithNotices(services.db, async (tx) => {
        const run = await lockRun(tx, runId);
        if (!run || run.phase !== "fetching") return false;
        const now = services.clock.now();
        const seq = run.pagesFetched + 1;
        await tx.insert(linearImportPages).values({ runId, seq, orgId, payloadEnc: cipher.encrypt(JSON.stringify(page.issues)) });
        const done = run.done + page.issues.length;
        const phase = more ? "fetching" : "applying";
        const total = more ? Math.max(run.total, done) : done;
        // Once every page is in, the bar counts what is applied, some of it while the fetch went on.
        const shown = more ? done : appliedOf(run.counts);
        await tx.update(linearImportRuns).set({ pagesFetched: seq, done: shown, total, phase, waitUntil: null, fetchHeartbeatAt: now, updatedAt: now }).where(eq(linearImportRuns.id, runId));
        if (seq === 1 || !more) await enqueue(tx, "linear.apply", { orgId, runId });
        await publishProgress(services, tx, { id: runId, orgId, source: reader.source, phase, done: shown, total, error: null });
        return more;
      });
      if (!alive) return;
      cursor = page.next;
    }
  } catch (error) {
    const code = error instanceof DomainError ? error.code : "UNAVAILABLE";
    await transactionWithNotices(services.db, async (tx) => {
      const now = services.clock.now();
      await tx.update(linearImportRuns).set({ phase: "failed", error: code, finishedAt: now, updatedAt: now }).where(and(eq(linearImportRuns.id, runId), eq(linearImportRuns.phase, "fetching")));
      await dropStaging(tx, runId);
      await publishProgress(services, tx, { id: runId, orgId, source: reader.source, phase: "failed", done: 0, total: 0, error: code });
    }).catch(() => {});
  } finally {
    beat.stop();
  }
}

/**
 * The run's heartbeat while this process reads, however long a page, its files or a Retry-After
 * take: a silent run is one whose reader died (run-row.ts, fetchStaleMs). One beat at a time, the
 * next scheduled when it ends; a failed beat is retried by the next. Never keeps the process alive.
 */
function heartbeat(services: Services, runId: string): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const beat = async () => {
    await services.db
      .update(linearImportRuns)
      .set({ fetchHeartbeatAt: sql`greatest(${linearImportRuns.fetchHeartbeatAt}, ${services.clock.now().toISOString()}::timestamptz)` })
      .where(and(eq(linearImportRuns.id, runId), eq(linearImportRuns.phase, "fetching")))
      .catch(() => {});
    schedule();
  };
  const schedule = () => {
    if (!stopped) timer = setTimeout(() => void beat(), services.config.IMPORT_FETCH_HEARTBEAT_MS).unref();
  };
  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
