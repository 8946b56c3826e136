/**
 * `npx tsx bench/jira-import.ts [--issues 2000]`: a Jira project imported into a new project on
 * PostgreSQL through jira.js and the shared pipeline, the way the app runs it (this process holds
 * the token, reads into staging, and its in-process outbox runner applies), against the local
 * Jira in a child process. Prints the import's time beside the time to read the same pages from
 * the local Jira alone, in the same run. Not run in CI; figures go in bench/README.md.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { wholeNumberOption } from "./lib/args.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log } from "./lib/stats.ts";

useBenchPostgres();
const size = wholeNumberOption("issues", 2000);
const { openBenchDatabase } = await import("./lib/env.ts");
const { jiraApi } = await import("../server/transfer/jira/client.ts");
const { fetchJiraPage } = await import("../server/transfer/jira/fetch.ts");
const { startJiraImport } = await import("../server/transfer/jira/index.ts");
const { importStatus } = await import("../server/transfer/pipeline/status.ts");
const { loadConfig } = await import("../server/config/index.ts");
const { startInlineRunner } = await import("../workers/inline.ts");
const { retascJobs } = await import("../workers/catalog.ts");
const { createLogger } = await import("../server/log.ts");

const fakeScript = `
  const { startFakeJira, generateJiraProject } = await import(${JSON.stringify(new URL("../test/fakes/jira.ts", import.meta.url).href)});
  const fake = await startFakeJira({ project: generateJiraProject({ issues: ${size}, key: "BJ" }) });
  process.stdout.write(JSON.stringify({ url: fake.url, email: fake.email, apiToken: fake.apiToken }) + "\\n");
`;
const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", fakeScript], { stdio: ["ignore", "pipe", "inherit"] });
const [line] = (await once(child.stdout!, "data")) as [Buffer];
const fake = JSON.parse(line.toString()) as { url: string; email: string; apiToken: string };
const credentials = { site: fake.url, email: fake.email, apiToken: fake.apiToken };

const bench = await openBenchDatabase({ pools: 1, connectionsPerPool: 6, prefix: "BNCH" });
try {
  const allow = loadConfig({ ...process.env, RETASC_IMPORT_ALLOW_HOSTS: new URL(fake.url).host });
  const services = { ...bench.pools[0]!, config: { ...bench.pools[0]!.config, outboundAllowHosts: allow.outboundAllowHosts, OUTBOX_POLL_MS: 100 } };
  const runner = await startInlineRunner({ services, database: bench.tdb.database, log: createLogger("silent"), catalog: retascJobs, sweeps: [], exclusive: false });
  const ctx = bench.org.agents.alice.ctx;
  const owner = { ...ctx, ...services, principal: ctx.principal };

  const api = await jiraApi(services.config, credentials);
  let t = performance.now();
  let pages = 0;
  for (let cursor: string | null = null, first = true; first || cursor !== null; first = false, pages++) cursor = (await fetchJiraPage(api, "BJ", cursor)).next;
  const fetchMs = performance.now() - t;

  t = performance.now();
  const { runId } = await startJiraImport(owner, { ...credentials, projectKey: "BJ", newProject: { name: "From Jira" } });
  let status = await importStatus(owner, { runId });
  while (status.phase !== "done" && status.phase !== "failed") {
    await new Promise((r) => setTimeout(r, 50));
    status = await importStatus(owner, { runId });
  }
  const importMs = performance.now() - t;
  if (status.phase !== "done") throw new Error(`the import failed: ${status.error}`);
  log(`jira import: ${status.done} issues (${pages} pages) in ${(importMs / 1000).toFixed(1)} s; reading the same pages alone ${(fetchMs / 1000).toFixed(1)} s (x${(importMs / fetchMs).toFixed(1)})`);
  await runner.stop();
} finally {
  await bench.close();
  child.kill();
}
