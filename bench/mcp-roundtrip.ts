/**
 * MCP round trips over loopback HTTP against the built app, beside an in-process call of
 * the same service function on the same database in the same run:
 * `npx tsx bench/mcp-roundtrip.ts [--quick]` (PostgreSQL: TEST_DATABASE_URL or the local default).
 * `get_issue` is measured as is; `next_issue` claims and the claim is released untimed,
 * so every iteration claims from the same ready queue.
 */
import crypto from "node:crypto";
import { setMaxListeners } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { removeTestBuild } from "../server/testing/build-dir.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { distribution, log, round, type Distribution } from "./lib/stats.ts";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export interface RoundTripResult {
  iterations: number;
  /** Load average when the run started: on a busy machine every figure is inflated. */
  loadAverage: number;
  getIssue: { http: Distribution; inProcess: Distribution; serverCpuMsPerCall: number; inProcessCpuMsPerCall: number };
  nextIssue: { http: Distribution; inProcess: Distribution };
}

/** CPU time (user + system) a process has used so far, in ms, from /proc (Linux). */
function processCpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const ticksPerSecond = 100;
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

export async function mcpRoundTrip(options: { iterations: number }): Promise<RoundTripResult> {
  // Each fetch of the SDK client's transport keeps an abort listener on the transport's one
  // signal until the request is garbage-collected: thousands of calls between collections are
  // not a leak, just past Node's warning threshold for one EventTarget.
  setMaxListeners(20_000);
  useBenchPostgres();
  // A private build, so a build running elsewhere in the tree is never served half-written.
  const buildDir = path.join(repoRoot, "node_modules/.cache/retasc-test-build", `bench-${crypto.randomBytes(4).toString("hex")}`);
  process.env.RETASC_TEST_BUILD_DIR ??= buildDir;
  const { callOk, connectClient, startSeededApp } = await import("../server/mcp/testing.ts");
  const { openPostgres } = await import("../db/client.ts");
  const { testConfig } = await import("../server/testing/db.ts");
  const { Keyring } = await import("../server/crypto/index.ts");
  const { authenticateAgentKey } = await import("../server/orgs/index.ts");
  const { systemClock } = await import("../server/context.ts");
  const { withPrincipal } = await import("../server/with-principal.ts");
  const { notifyPublisher } = await import("../server/events/index.ts");
  const { getIssue } = await import("../server/issues/index.ts");
  const { nextIssue, releaseIssue } = await import("../server/queue/index.ts");

  const loadAverage = round(os.loadavg()[0]!, 2);
  log("building and starting the app");
  const seeded = await startSeededApp(["BEN"], { LOG_LEVEL: "warn" });
  const database = await openPostgres(seeded.env.DATABASE_URL!, { max: 4 });
  let client: Client | undefined;
  try {
    const key = seeded.orgs.BEN!.people.alice.key;
    client = await connectClient(seeded.endpoint, key, { name: "bench" });
    const principal = (await authenticateAgentKey(database.db, key))!;
    const ctx = withPrincipal(
      {
        db: database.db,
        config: testConfig(),
        keyring: new Keyring(Buffer.from(seeded.env.RETASC_MASTER_KEY!, "base64")),
        clock: systemClock,
        events: notifyPublisher,
      },
      principal,
    );
    const issues: string[] = [];
    for (let i = 0; i < 20; i++) {
      const issue = await callOk(client, "save_issue", {
        title: `Benchmark issue ${i}`,
        body: "A body of a realistic size. ".repeat(20),
        work: true,
        changeType: "feat",
        noDependency: "benchmark",
        priority: (i % 4) + 1,
      });
      issues.push(issue.identifier);
    }
    const mcp = client;
    const warmup = Math.min(200, options.iterations);
    const getHttp: number[] = [];
    const getLocal: number[] = [];
    const nextHttp: number[] = [];
    const nextLocal: number[] = [];
    log(`get_issue: ${options.iterations} iterations each way`);
    for (let i = 0; i < options.iterations + warmup; i++) {
      const identifier = issues[i % issues.length]!;
      const http = await time(() => callOk(mcp, "get_issue", { identifier }));
      const local = await time(() => getIssue(ctx, { identifier }));
      if (i >= warmup) {
        getHttp.push(http);
        getLocal.push(local);
      }
    }
    // The app's own CPU per get_issue request, alone (no in-process calls interleaved).
    const serverPid = seeded.app.child.pid!;
    const cpuBefore = processCpuMs(serverPid);
    for (let i = 0; i < options.iterations; i++) await callOk(mcp, "get_issue", { identifier: issues[i % issues.length]! });
    const serverCpuMsPerCall = (processCpuMs(serverPid) - cpuBefore) / options.iterations;
    // The same service call's CPU in this process: what the HTTP path adds is the difference.
    const localBefore = process.cpuUsage();
    for (let i = 0; i < options.iterations; i++) await getIssue(ctx, { identifier: issues[i % issues.length]! });
    const localUsage = process.cpuUsage(localBefore);
    const inProcessCpuMsPerCall = (localUsage.user + localUsage.system) / 1000 / options.iterations;
    log(`next_issue: ${options.iterations} iterations each way`);
    for (let i = 0; i < options.iterations + warmup; i++) {
      let claim: { identifier: string; claimToken: string } | undefined;
      const http = await time(async () => {
        claim = await callOk(mcp, "next_issue");
      });
      await callOk(mcp, "release_issue", { identifier: claim!.identifier, claimToken: claim!.claimToken });
      let local: Awaited<ReturnType<typeof nextIssue>> | undefined;
      const inProcess = await time(async () => {
        local = await nextIssue(ctx, {});
      });
      if (!local || !("claimToken" in local)) throw new Error("the in-process next_issue claimed nothing");
      await releaseIssue(ctx, { identifier: local.identifier, claimToken: local.claimToken });
      if (i >= warmup) {
        nextHttp.push(http);
        nextLocal.push(inProcess);
      }
    }
    return {
      iterations: options.iterations,
      loadAverage,
      getIssue: { http: distribution(getHttp), inProcess: distribution(getLocal), serverCpuMsPerCall, inProcessCpuMsPerCall },
      nextIssue: { http: distribution(nextHttp), inProcess: distribution(nextLocal) },
    };
  } finally {
    await client?.close();
    await database.close();
    await seeded.close();
    removeTestBuild(buildDir);
  }
}

function report(result: RoundTripResult): string {
  const rows = [
    ["get_issue", result.getIssue, 3],
    ["next_issue", result.nextIssue, undefined],
  ] as const;
  const lines = [
    "call        over HTTP p50 / p99     in process p50 / p99    HTTP overhead p50   target",
    "----------  ---------------------   ---------------------   -----------------   ---------------",
  ];
  for (const [name, d, target] of rows) {
    const pair = (x: Distribution) => `${round(x.p50, 3)} / ${round(x.p99, 3)} ms`.padEnd(24);
    const target_ = target === undefined ? "-" : `p50 < ${target} ms: ${d.http.p50 < target ? "PASS" : "FAIL"}`;
    lines.push(`${name.padEnd(12)}${pair(d.http)}${pair(d.inProcess)}${`${round(d.http.p50 - d.inProcess.p50, 3)} ms`.padEnd(20)}${target_}`);
  }
  return lines.join("\n");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes("--quick");
  mcpRoundTrip({ iterations: quick ? 200 : 2_000 })
    .then((result) => {
      process.stdout.write(
        `\nMCP round trips over loopback HTTP (${result.iterations} each, load average ${result.loadAverage} on ${os.cpus().length} CPUs)\n` +
          `${report(result)}\nCPU per get_issue: ${round(result.getIssue.serverCpuMsPerCall, 3)} ms in the app per HTTP request, ` +
          `${round(result.getIssue.inProcessCpuMsPerCall, 3)} ms per in-process call\n`,
      );
      const dir = path.join(repoRoot, "bench/results");
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, "mcp-roundtrip.json"), `${JSON.stringify({ at: new Date().toISOString(), ...result }, null, 2)}\n`);
    })
    .catch((error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 2;
    });
}
