/**
 * `npm run bench:imports [-- --issues 2000] [--source jira] [--latency-ms 0]`: issue 29's goal for every tracker
 * source: a project of 2,000 issues imported through the real adapter and the real pipeline in
 * at most 1.5x the time its fetch alone takes, both measured in the same run. Each source's
 * local server (test/fakes/, started by ./lib/import-fake.ts in a process of its own) serves a
 * generated project; this process is the app: it reads the source through the adapter the
 * import uses (the baseline: every page and the files the import downloads read, nothing
 * staged; timed before and after the import, the faster taken), then imports it into a new project on PostgreSQL, holding the credential,
 * staging and downloading files, its in-process outbox runner applying. Prints each source's
 * import time, its baseline and their ratio; exits 1 if any source is above 1.5x. CSV has no
 * fetch (the file comes with the request), so no baseline. The fakes answer at once unless
 * `--latency-ms` delays every request they answer (a tracker's API over the internet), for the
 * fetch alone and the import alike.
 *
 * Then, per source, the rest of issue 29's sequence on the same project: `--changes` items (100)
 * changed at the source (renamed, a comment added) and the project imported again (0 created, the
 * changes applied, no issue or comment copied); and the changed source imported into a second org
 * by the product's worker process (`workers/main.ts`), SIGKILLed once half the issues are applied
 * (this process, the app, goes on reading and staging), and started again: the run resumes at the first page not committed (no
 * page applied twice) and ends with the same project as the import never stopped. Exits 1 if a
 * check fails. Not run in CI; figures go in bench/README.md.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import os from "node:os";
import readline from "node:readline";
import { wholeNumberOption } from "./lib/args.ts";
import type { ImportFake } from "./lib/import-fake.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log } from "./lib/stats.ts";

const GOAL = 1.5;
useBenchPostgres();
const size = wholeNumberOption("issues", 2000);
const latencyMs = wholeNumberOption("latency-ms", 0, { least: 0 });
const changes = wholeNumberOption("changes", 100);
const only = process.argv.includes("--source") ? process.argv[process.argv.indexOf("--source") + 1] : undefined;
const { openBenchDatabase } = await import("./lib/env.ts");
const { withPrincipal } = await import("../server/with-principal.ts");
const { humanPrincipal } = await import("../server/orgs/access.ts");
const { importStatus } = await import("../server/transfer/pipeline/status.ts");
const linear = await import("../server/transfer/linear/start.ts");
const jira = await import("../server/transfer/jira/start.ts");
const asana = await import("../server/transfer/asana/start.ts");
const shortcut = await import("../server/transfer/shortcut/start.ts");
const clickup = await import("../server/transfer/clickup/start.ts");
const { startInlineRunner } = await import("../workers/inline.ts");
const { retascJobs } = await import("../workers/catalog.ts");
const { createLogger } = await import("../server/log.ts");
const { seedOrg } = await import("../server/testing/fixtures.ts");
const { query } = await import("../db/client.ts");
const { sql } = await import("drizzle-orm");
const { changesMissed, differences, projectNow } = await import("./lib/import-checks.ts");
const { startWorker } = await import("./lib/worker-process.ts");
type Ctx = import("../server/context.ts").Ctx;
type Reader = import("../server/transfer/pipeline/stream.ts").SourceReader;
type SourceAttachment = import("../server/transfer/pipeline/stream.ts").SourceAttachment;
const { FILES_AT_ONCE } = await import("../server/transfer/pipeline/files.ts");
const { MAX_FILE_BYTES } = await import("../server/issues/attachments-files.ts");

/** Where a run goes: the new project each source is first imported into, or the project it made (importing again). */
type Target = { projectId: string } | "new";
const into = (target: Target, newProject: object) => (target === "new" ? { newProject } : target);
/** Each source: its reader as the import builds it, and the import into a target. */
const sources: Record<string, { read(ctx: Ctx, input: never): Promise<{ reader: Reader }>; start(ctx: Ctx, input: never, target: Target): Promise<{ runId: string }> }> = {
  linear: {
    read: (ctx, input) => linear.linearSource(ctx, linear.dryRunInput.parse(input)),
    start: (ctx, input, target) => linear.startLinearImport(ctx, { ...(input as object), ...into(target, { name: "From Linear" }) } as never),
  },
  jira: {
    read: (ctx, input) => jira.jiraSource(ctx, jira.dryRunJiraInput.parse(input)),
    start: (ctx, input, target) => jira.startJiraImport(ctx, { ...(input as object), ...into(target, { name: "From Jira" }) } as never),
  },
  "jira-dc": {
    read: (ctx, input) => jira.jiraSource(ctx, jira.dryRunJiraInput.parse(input)),
    start: (ctx, input, target) => jira.startJiraImport(ctx, { ...(input as object), ...into(target, { name: "From Jira DC" }) } as never),
  },
  asana: {
    read: (ctx, input) => asana.asanaSource(ctx, asana.dryRunAsanaInput.parse(input)),
    start: (ctx, input, target) => asana.startAsanaImport(ctx, { ...(input as object), ...into(target, { prefix: "BAS" }) } as never),
  },
  shortcut: {
    read: (ctx, input) => shortcut.shortcutSource(ctx, shortcut.dryRunShortcutInput.parse(input)),
    start: (ctx, input, target) => shortcut.startShortcutImport(ctx, { ...(input as object), ...into(target, { prefix: "BSC" }) } as never),
  },
  clickup: {
    read: (ctx, input) => clickup.clickupSource(ctx, clickup.dryRunClickUpInput.parse(input)),
    start: (ctx, input, target) => clickup.startClickUpImport(ctx, { ...(input as object), ...into(target, { prefix: "BCU" }) } as never),
  },
};

type Status = Awaited<ReturnType<typeof importStatus>>;
type Counts = NonNullable<Status["counts"]>;
/** Polls a run's status every 50 ms until it ends, calling `each` with every status seen; a failed run throws. */
async function waitForEnd(ctx: Ctx, runId: string, each: (status: Status) => void | Promise<void> = () => {}): Promise<Status & { counts: Counts }> {
  for (;;) {
    const status = await importStatus(ctx, { runId });
    await each(status);
    if (status.phase === "failed") throw new Error(`the import failed: ${status.error}`);
    if (status.phase === "done" && status.counts) return { ...status, counts: status.counts };
    await new Promise((r) => setTimeout(r, 50));
  }
}
const appliedOf = (s: Status) => (s.counts ? s.counts.created + s.counts.updated + s.counts.unchanged : 0);
if (only && !Object.hasOwn(sources, only)) throw new Error(`no source ${only}: one of ${Object.keys(sources).join(", ")}`);

/**
 * Everything the import reads, read through its adapter and nothing staged: the floor the import
 * cannot beat. The pages in order, and each page's files (those the import downloads: files at the
 * source within the size limit) `FILES_AT_ONCE` at a time beside the page reads, a file waiting
 * only for its page.
 */
async function fetchAlone(reader: Reader): Promise<{ ms: number; issues: number; files: number }> {
  const t = performance.now();
  const files: SourceAttachment[] = [];
  let issues = 0;
  let reading = true;
  let next = 0;
  const downloader = async () => {
    for (;;) {
      const file = files[next];
      if (file) {
        next++;
        await reader.fetchFile!(file);
      } else if (!reading) return;
      else await new Promise((r) => setTimeout(r, 5));
    }
  };
  const downloads = reader.fetchFile ? Array.from({ length: FILES_AT_ONCE }, downloader) : [];
  try {
    for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
      const page = await reader.readPage(cursor);
      issues += page.issues.length;
      files.push(...page.issues.flatMap((i) => i.attachments.filter((a) => a.file && (a.file.size ?? 0) <= MAX_FILE_BYTES)));
      cursor = page.next;
    }
  } finally {
    reading = false;
  }
  await Promise.all(downloads);
  return { ms: performance.now() - t, issues, files: reader.fetchFile ? files.length : 0 };
}

const bench = await openBenchDatabase({ pools: 1, connectionsPerPool: 6, prefix: "BNCH" });
const results: { source: string; issues: number; importMs: number; stagedMs: number; fetchMs: number }[] = [];
const sequels: { source: string; againMs: number; again: Counts; killedAt: string; resumeMs: number; wholeMs: number; wrong: string[] }[] = [];
try {
  for (const name of only ? [only] : Object.keys(sources)) {
    const child = spawn(process.execPath, ["--import", "tsx", new URL("./lib/import-fake.ts", import.meta.url).pathname, name, String(size), String(latencyMs)], { stdio: ["pipe", "pipe", "inherit"] });
    const worker: { process: ChildProcess | null } = { process: null };
    try {
      const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
      const fake = JSON.parse((await lines.next()).value as string) as ImportFake;
      const pool = bench.pools[0]!;
      const services = { ...pool, config: { ...pool.config, ...fake.config, outboundAllowHosts: new Set([fake.host]), OUTBOX_POLL_MS: 100 } } as typeof pool;
      const runner = await startInlineRunner({ services, database: bench.tdb.database, log: createLogger("silent"), catalog: retascJobs, sweeps: [], exclusive: false });
      const ctx = withPrincipal(services, humanPrincipal(bench.org.orgId, bench.org.agents.alice.userId, "cli"));
      const source = sources[name]!;
      const before = await fetchAlone((await source.read(ctx, fake.input as never)).reader);
      const t = performance.now();
      const { runId } = await source.start(ctx, fake.input as never, "new");
      let stagedMs = 0;
      const status = await waitForEnd(ctx, runId, (s) => {
        if (!stagedMs && s.phase !== "fetching") stagedMs = performance.now() - t;
      });
      const importMs = performance.now() - t;
      const after = await fetchAlone((await source.read(ctx, fake.input as never)).reader);
      const fetchMs = Math.min(before.ms, after.ms);
      results.push({ source: name, issues: status.done, importMs, stagedMs, fetchMs });
      log(`${name}: ${status.done} issues imported in ${(importMs / 1000).toFixed(2)} s (read and staged ${(stagedMs / 1000).toFixed(2)} s, applied and linked ${((importMs - stagedMs) / 1000).toFixed(2)} s); the fetch alone (${after.files} files) ${(fetchMs / 1000).toFixed(2)} s (${(before.ms / 1000).toFixed(2)} before, ${(after.ms / 1000).toFixed(2)} after): x${(importMs / fetchMs).toFixed(2)}`);

      // Changed at the source, imported again into the same project.
      const first = await projectNow(services, bench.org.orgId, status.projectId);
      child.stdin!.write(`change ${changes}\n`);
      await lines.next();
      const t2 = performance.now();
      const again = await waitForEnd(ctx, (await source.start(ctx, fake.input as never, { projectId: status.projectId })).runId);
      const againMs = performance.now() - t2;
      await runner.stop();
      const changed = await projectNow(services, bench.org.orgId, status.projectId);
      const wrong = changesMissed(first.issues, changed.issues, changed.linked, changes);
      const expected = { created: 0, updated: changes, unchanged: status.done - changes };
      if (again.counts.created !== expected.created || again.counts.updated !== expected.updated || again.counts.unchanged !== expected.unchanged) wrong.push(`re-import counts ${JSON.stringify(again.counts)}, expected ${JSON.stringify(expected)}`);
      log(`${name}: ${changes} items changed at the source and imported again in ${(againMs / 1000).toFixed(2)} s: created ${again.counts.created}, updated ${again.counts.updated}, unchanged ${again.counts.unchanged}`);

      // The changed source into a second org by the worker process, killed half way and started again.
      const org = await seedOrg(services, { prefix: "KILL", name: `Killed ${name}` });
      const otherCtx = withPrincipal(services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
      const workerEnv = { DATABASE_URL: bench.url, RETASC_MASTER_KEY: bench.masterKey, LOG_LEVEL: "warn", OUTBOX_POLL_MS: "100", JOB_LOCK_MS: "2000", RETASC_IMPORT_ALLOW_HOSTS: fake.host, ...fake.config };
      worker.process = startWorker(workerEnv);
      const t3 = performance.now();
      const killed = await source.start(otherCtx, fake.input as never, "new");
      let killedAt = "";
      let killedMs = 0;
      const resumed = await waitForEnd(otherCtx, killed.runId, async (s) => {
        // The fetch goes on in this process meanwhile: only the applying worker is killed.
        if (killedAt || s.phase === "done" || appliedOf(s) < status.done / 2) return;
        worker.process!.kill("SIGKILL");
        await once(worker.process!, "exit");
        killedMs = performance.now();
        const [run] = await query<{ pages_applied: number; pages_fetched: number; counts: string }>(services.db, sql`select pages_applied, pages_fetched, counts from linear_import_runs where id = ${killed.runId}`);
        const applied = JSON.parse(run!.counts) as Counts;
        killedAt = `${applied.created} of ${status.done} issues (page ${run!.pages_applied}; ${run!.pages_fetched} read)`;
        log(`${name}: worker SIGKILLed with ${killedAt} applied; starting it again`);
        worker.process = startWorker(workerEnv);
      });
      const wholeMs = performance.now() - t3;
      if (!killedAt) wrong.push("the worker was never killed: the run ended before half was applied");
      const resumeMs = performance.now() - killedMs;
      // A page applied twice would count its issues again, as unchanged the second time.
      const { created, updated, unchanged } = resumed.counts;
      if (created !== status.done || updated + unchanged > 0) wrong.push(`the resumed run counted ${created} created, ${updated} updated, ${unchanged} unchanged; the source has ${status.done}`);
      const other = await projectNow(services, org.orgId, resumed.projectId);
      if (other.linked !== other.issues.size) wrong.push(`${other.linked} source links for ${other.issues.size} issues after the resume`);
      wrong.push(...differences(changed.issues, other.issues, changes));
      sequels.push({ source: name, againMs, again: again.counts, killedAt, resumeMs, wholeMs, wrong });
      log(`${name}: killed at ${killedAt}, resumed and done in ${(resumeMs / 1000).toFixed(2)} s (${(wholeMs / 1000).toFixed(2)} s in all); ${wrong.length ? `WRONG: ${wrong.join("; ")}` : "the same project as the import that did not stop"}`);
    } finally {
      worker.process?.kill("SIGTERM");
      child.kill();
    }
  }
} finally {
  await bench.close();
}

log(`load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")} on ${os.cpus().length} CPUs; every request to a fake answered ${latencyMs} ms late`);
log(`| source | issues | import (read and staged + applied) | fetch alone (baseline) | import / fetch | goal ≤ ${GOAL}x |`);
log("|---|---|---|---|---|---|");
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
for (const r of results) log(`| ${r.source} | ${r.issues} | ${s(r.importMs)} (${s(r.stagedMs)} + ${s(r.importMs - r.stagedMs)}) | ${s(r.fetchMs)} | ${(r.importMs / r.fetchMs).toFixed(2)}x | ${r.importMs / r.fetchMs <= GOAL ? "PASS" : "FAIL"} |`);
log("");
log(`| source | ${changes} changed, imported again | created / updated / unchanged | SIGKILLed with applied | resumed to done | import with the kill | checks |`);
log("|---|---|---|---|---|---|---|");
for (const r of sequels) log(`| ${r.source} | ${s(r.againMs)} | ${r.again.created} / ${r.again.updated} / ${r.again.unchanged} | ${r.killedAt} | ${s(r.resumeMs)} | ${s(r.wholeMs)} | ${r.wrong.length ? r.wrong.join("; ") : "PASS"} |`);
process.exit(results.some((r) => r.importMs / r.fetchMs > GOAL) || sequels.some((r) => r.wrong.length > 0) ? 1 : 0);
