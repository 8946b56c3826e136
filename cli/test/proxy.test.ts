import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { folderLaunch } from "../../server/testing/mcp-marker.ts";
import { waitFor } from "../../server/testing/wait.ts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { alive, boundFolder, cliEnv, removeTemps, startServer, tempDir, workspaceBin, sleep, type Person, type Server } from "./testing.ts";

/**
 * The watchdog: an agent whose .mcp.json runs `retasc mcp proxy` claims through it with a
 * 3-second lease and RETASC_HEARTBEAT_MS=1000, sits idle for two lease lengths and still
 * holds the lease; SIGKILLed, its proxy exits with it, the heartbeats stop, and the lease
 * lapses and is reclaimed. (A short lease shows the same as a long one, in a fraction of the time.) The agent is its own process speaking MCP over stdio with the SDK's client.
 */
const LEASE_SECONDS = 3;
let server: Server;
let ada: Person;
let repo: string;
let observer: Client;
let agent: ChildProcess | undefined;
const PATH = `${path.dirname(workspaceBin)}${path.delimiter}${process.env.PATH}`;
const sdkClient = createRequire(import.meta.url).resolve("@modelcontextprotocol/sdk/client/index.js");
const sdkStdio = createRequire(import.meta.url).resolve("@modelcontextprotocol/sdk/client/stdio.js");

/** The agent: starts the server its folder's .mcp.json names (MCP_LAUNCH: folderLaunch), claims the next issue, prints it and the proxy's pid, then idles. */
const agentScript = `
import fs from "node:fs";
const { Client } = await import(${JSON.stringify(sdkClient)});
const { StdioClientTransport } = await import(${JSON.stringify(sdkStdio)});
const entry = JSON.parse(process.env.MCP_LAUNCH);
const transport = new StdioClientTransport({ command: entry.command, args: entry.args, cwd: process.cwd(), env: process.env, stderr: "inherit" });
const client = new Client({ name: "idle-agent", version: "1.0.0" });
await client.connect(transport);
const claim = await client.callTool({ name: "next_issue", arguments: {} });
process.stdout.write(JSON.stringify({ proxyPid: transport.pid, claim: claim.structuredContent }) + "\\n");
setInterval(() => {}, 1 << 30);
`;

beforeAll(async () => {
  server = await startServer({ LEASE_TTL_SECONDS: String(LEASE_SECONDS), RECLAIM_SWEEP_MS: "1000" });
  ({ person: ada, repo, client: observer } = await boundFolder(server, "Ada"));
});
afterAll(async () => {
  agent?.kill("SIGKILL");
  await observer?.close();
  await server?.close();
  removeTemps();
});

async function tool(name: string, args: Record<string, unknown> = {}): Promise<any> {
  return (await observer.callTool({ name, arguments: args })).structuredContent;
}


it("keeps an idle agent's lease alive while it lives, and lets it lapse once the agent is killed", { timeout: 120_000 }, async () => {
  const filed = await tool("save_issue", { title: "Run the long build", work: true, changeType: "feat", noDependency: "a long build", priority: 1 });
  const script = path.join(tempDir("retasc-agent-"), "agent.mjs");
  fs.writeFileSync(script, agentScript);
  agent = spawn(process.execPath, [script], { cwd: repo, env: cliEnv(ada, { PATH, MCP_LAUNCH: JSON.stringify(folderLaunch(repo, workspaceBin)), RETASC_HEARTBEAT_MS: "1000" }), stdio: ["ignore", "pipe", "inherit"] });
  const started = await new Promise<{ proxyPid: number; claim: { identifier: string; expiresAt: string; fence: number } }>((resolve, reject) => {
    let text = "";
    agent!.stdout!.on("data", (d) => {
      text += d;
      if (text.includes("\n")) resolve(JSON.parse(text));
    });
    agent!.on("exit", (code) => reject(new Error(`the agent exited with ${code}`)));
  });
  expect(started.claim.identifier).toBe(filed.identifier);
  const claimedAt = Date.now();

  // Idle for two lease lengths, looked at every second: a fixed stretch, as the lease must outlive its length.
  // Without the proxy's heartbeats it would end at 3 s; held past 6 s, it was renewed twice or more.
  while (Date.now() - claimedAt < 2 * LEASE_SECONDS * 1000) {
    await sleep(1_000);
    const issue = await tool("get_issue", { identifier: filed.identifier });
    expect(issue.held, `at ${Math.round((Date.now() - claimedAt) / 1000)} s`).toBe(true);
    expect(Date.parse(issue.lease.expiresAt)).toBeGreaterThan(Date.now());
  }
  const checked = await tool("check_claim", { identifier: filed.identifier });
  // The observer is another session of the same key: it sees the agent's claim, never holds it.
  expect(checked).toMatchObject({ held: true, youHold: false, yourKey: true, status: "other_session", fence: started.claim.fence });

  agent.kill("SIGKILL");
  // The proxy sees its stdin close and exits: nothing heartbeats a dead agent's claim.
  const deadline = Date.now() + 10_000;
  while (alive(started.proxyPid) && Date.now() < deadline) await sleep(100);
  expect(alive(started.proxyPid)).toBe(false);

  // The lease lapses when it says, not before: nothing released it, the heartbeats just stopped.
  const lapsesBy = Date.parse((await tool("get_issue", { identifier: filed.identifier })).lease.expiresAt);
  await waitFor(async () => !(await tool("get_issue", { identifier: filed.identifier })).held, Math.max(0, lapsesBy - Date.now()) + 10_000, "the lease to lapse");
  expect(Date.now()).toBeGreaterThanOrEqual(lapsesBy);
  const reclaimed = await tool("next_issue");
  expect(reclaimed).toMatchObject({ identifier: filed.identifier, fence: started.claim.fence + 1 });
});
