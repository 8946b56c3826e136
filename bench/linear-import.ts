/**
 * `npx tsx bench/linear-import.ts [--issues 2000] [--baseline <git rev>]`: a Linear team imported
 * into a new project on PostgreSQL, the way the app runs it (this process is the app: it holds
 * the key, fetches into staging, and its in-process outbox runner applies the pages), against
 * the fake Linear API in a child process so its memory is not counted. Prints the import's time
 * and this process's peak RSS, beside the time to read the same pages from the fake alone (the
 * floor the import cannot beat). With `--baseline`, the same benchmark of that revision runs
 * first, from a copy of its tree (`git archive`, sharing node_modules), so both figures come
 * from one run on one machine. Not run in CI; figures go in bench/README.md.
 */
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { wholeNumberOption } from "./lib/args.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log } from "./lib/stats.ts";

useBenchPostgres();
const size = wholeNumberOption("issues", 2000);
const baselineAt = process.argv.indexOf("--baseline");
if (baselineAt >= 0) await runBaseline(process.argv[baselineAt + 1] ?? "");
const { openBenchDatabase } = await import("./lib/env.ts");
const { withPrincipal } = await import("../server/with-principal.ts");
const { humanPrincipal } = await import("../server/orgs/access.ts");
const { linearApi } = await import("../server/transfer/linear/client.ts");
const { fetchIssuePage } = await import("../server/transfer/linear/fetch.ts");
const { linearImportStatus, startLinearImport } = await import("../server/transfer/linear/index.ts");
const { startInlineRunner } = await import("../workers/inline.ts");
const { retascJobs } = await import("../workers/catalog.ts");
const { createLogger } = await import("../server/log.ts");

const fakeScript = `
  const { startFakeLinear, generateWorkspace } = await import(${JSON.stringify(new URL("../test/fakes/linear.ts", import.meta.url).href)});
  const fake = await startFakeLinear({ workspace: generateWorkspace({ issues: ${size} }) });
  process.stdout.write(JSON.stringify({ apiUrl: fake.apiUrl, apiKey: fake.apiKey, teamId: fake.workspace.team.id }) + "\\n");
`;
const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", fakeScript], { stdio: ["ignore", "pipe", "inherit"] });
const [line] = (await once(child.stdout!, "data")) as [Buffer];
const fake = JSON.parse(line.toString()) as { apiUrl: string; apiKey: string; teamId: string };

const bench = await openBenchDatabase({ pools: 1, connectionsPerPool: 6, prefix: "BNCH" });
try {
  const services = { ...bench.pools[0]!, config: { ...bench.pools[0]!.config, LINEAR_API_URL: fake.apiUrl, OUTBOX_POLL_MS: 100 } };
  const runner = await startInlineRunner({ services, database: bench.tdb.database, log: createLogger("silent"), catalog: retascJobs, sweeps: [], exclusive: false });
  const ctx = withPrincipal(services, humanPrincipal(bench.org.orgId, bench.org.agents.alice.userId, "cli"));

  const api = linearApi(services.config, fake.apiKey);
  let t = performance.now();
  let pages = 0;
  for (let cursor: string | null = null, more = true; more; pages++) {
    const page = await fetchIssuePage(api, fake.teamId, cursor);
    cursor = page.endCursor;
    more = page.hasNextPage;
  }
  const fetchMs = performance.now() - t;

  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  t = performance.now();
  const { runId } = await startLinearImport(ctx, { apiKey: fake.apiKey, teamId: fake.teamId, newProject: { name: "Engineering" } });
  let status = await linearImportStatus(ctx, { runId });
  let stagedMs = 0;
  while (status.phase !== "done" && status.phase !== "failed") {
    await new Promise((r) => setTimeout(r, 50));
    status = await linearImportStatus(ctx, { runId });
    if (!stagedMs && status.phase !== "fetching") stagedMs = performance.now() - t;
  }
  const importMs = performance.now() - t;
  clearInterval(sampler);
  if (status.phase !== "done") throw new Error(`the import failed: ${status.error}`);
  const MB = 1024 * 1024;
  log(`${baselineAt >= 0 ? "this tree: " : ""}linear import: ${status.done} issues (${pages} pages) in ${(importMs / 1000).toFixed(1)} s; reading the same pages alone ${(fetchMs / 1000).toFixed(1)} s (x${(importMs / fetchMs).toFixed(1)})`);
  log(`read and staged in ${(stagedMs / 1000).toFixed(1)} s, applied and linked in ${((importMs - stagedMs) / 1000).toFixed(1)} s`);
  log(`app peak RSS ${(peak / MB).toFixed(0)} MB (+${((peak - rssBefore) / MB).toFixed(0)} MB over its level before the import)`);
  await runner.stop();
} finally {
  await bench.close();
  child.kill();
}

/** This benchmark as it was at `rev`, run to its end in a child, its lines marked as the baseline's. */
async function runBaseline(rev: string) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const commit = execFileSync("git", ["-C", root, "rev-parse", "--verify", `${rev}^{commit}`], { encoding: "utf8" }).trim();
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-bench-baseline-"));
  try {
    execFileSync("sh", ["-c", `git -C "$0" archive "$1" | tar -x -C "$2"`, root, commit, tree]);
    fs.symlinkSync(path.join(root, "node_modules"), path.join(tree, "node_modules"));
    const child = spawn(process.execPath, ["--import", "tsx", "bench/linear-import.ts", "--issues", String(size)], { cwd: tree, stdio: ["ignore", "inherit", "pipe"] });
    child.stderr!.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n").filter(Boolean)) log(`baseline ${commit.slice(0, 8)}: ${line.replace(/^\[bench\] /, "")}`);
    });
    const [code] = (await once(child, "exit")) as [number | null];
    if (code !== 0) throw new Error(`the baseline's benchmark exited ${code}`);
  } finally {
    fs.rmSync(tree, { recursive: true, force: true });
  }
}
