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
 * fetch alone and the import alike. Not run in CI; figures go in bench/README.md.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import os from "node:os";
import { wholeNumberOption } from "./lib/args.ts";
import type { ImportFake } from "./lib/import-fake.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log } from "./lib/stats.ts";

const GOAL = 1.5;
useBenchPostgres();
const size = wholeNumberOption("issues", 2000);
const latencyMs = wholeNumberOption("latency-ms", 0, { least: 0 });
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
type Ctx = import("../server/context.ts").Ctx;
type Reader = import("../server/transfer/pipeline/stream.ts").SourceReader;
type SourceAttachment = import("../server/transfer/pipeline/stream.ts").SourceAttachment;
const { FILES_AT_ONCE } = await import("../server/transfer/pipeline/files.ts");
const { MAX_FILE_BYTES } = await import("../server/issues/attachments-files.ts");

/** Each source: its reader as the import builds it, and the import into a new project. */
const sources: Record<string, { read(ctx: Ctx, input: never): Promise<{ reader: Reader }>; start(ctx: Ctx, input: never): Promise<{ runId: string }> }> = {
  linear: {
    read: (ctx, input) => linear.linearSource(ctx, linear.dryRunInput.parse(input)),
    start: (ctx, input) => linear.startLinearImport(ctx, { ...(input as object), newProject: { name: "From Linear" } } as never),
  },
  jira: {
    read: (ctx, input) => jira.jiraSource(ctx, jira.dryRunJiraInput.parse(input)),
    start: (ctx, input) => jira.startJiraImport(ctx, { ...(input as object), newProject: { name: "From Jira" } } as never),
  },
  "jira-dc": {
    read: (ctx, input) => jira.jiraSource(ctx, jira.dryRunJiraInput.parse(input)),
    start: (ctx, input) => jira.startJiraImport(ctx, { ...(input as object), newProject: { name: "From Jira DC" } } as never),
  },
  asana: {
    read: (ctx, input) => asana.asanaSource(ctx, asana.dryRunAsanaInput.parse(input)),
    start: (ctx, input) => asana.startAsanaImport(ctx, { ...(input as object), newProject: { prefix: "BAS" } } as never),
  },
  shortcut: {
    read: (ctx, input) => shortcut.shortcutSource(ctx, shortcut.dryRunShortcutInput.parse(input)),
    start: (ctx, input) => shortcut.startShortcutImport(ctx, { ...(input as object), newProject: { prefix: "BSC" } } as never),
  },
  clickup: {
    read: (ctx, input) => clickup.clickupSource(ctx, clickup.dryRunClickUpInput.parse(input)),
    start: (ctx, input) => clickup.startClickUpImport(ctx, { ...(input as object), newProject: { prefix: "BCU" } } as never),
  },
};
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
try {
  for (const name of only ? [only] : Object.keys(sources)) {
    const child = spawn(process.execPath, ["--import", "tsx", new URL("./lib/import-fake.ts", import.meta.url).pathname, name, String(size), String(latencyMs)], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const [line] = (await once(child.stdout!, "data")) as [Buffer];
      const fake = JSON.parse(line.toString()) as ImportFake;
      const pool = bench.pools[0]!;
      const services = { ...pool, config: { ...pool.config, ...fake.config, outboundAllowHosts: new Set([fake.host]), OUTBOX_POLL_MS: 100 } } as typeof pool;
      const runner = await startInlineRunner({ services, database: bench.tdb.database, log: createLogger("silent"), catalog: retascJobs, sweeps: [], exclusive: false });
      const ctx = withPrincipal(services, humanPrincipal(bench.org.orgId, bench.org.agents.alice.userId, "cli"));
      const source = sources[name]!;
      const before = await fetchAlone((await source.read(ctx, fake.input as never)).reader);
      const t = performance.now();
      const { runId } = await source.start(ctx, fake.input as never);
      let status = await importStatus(ctx, { runId });
      let stagedMs = 0;
      while (status.phase !== "done" && status.phase !== "failed") {
        await new Promise((r) => setTimeout(r, 50));
        status = await importStatus(ctx, { runId });
        if (!stagedMs && status.phase !== "fetching") stagedMs = performance.now() - t;
      }
      const importMs = performance.now() - t;
      await runner.stop();
      if (status.phase !== "done") throw new Error(`the ${name} import failed: ${status.error}`);
      const after = await fetchAlone((await source.read(ctx, fake.input as never)).reader);
      const fetchMs = Math.min(before.ms, after.ms);
      results.push({ source: name, issues: status.done, importMs, stagedMs, fetchMs });
      log(`${name}: ${status.done} issues imported in ${(importMs / 1000).toFixed(2)} s (read and staged ${(stagedMs / 1000).toFixed(2)} s, applied and linked ${((importMs - stagedMs) / 1000).toFixed(2)} s); the fetch alone (${after.files} files) ${(fetchMs / 1000).toFixed(2)} s (${(before.ms / 1000).toFixed(2)} before, ${(after.ms / 1000).toFixed(2)} after): x${(importMs / fetchMs).toFixed(2)}`);
    } finally {
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
process.exit(results.some((r) => r.importMs / r.fetchMs > GOAL) ? 1 : 0);
