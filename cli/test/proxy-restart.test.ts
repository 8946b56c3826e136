import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { folderLaunch } from "../../server/testing/mcp-marker.ts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { alive, boundFolder, cliEnv, removeTemps, startServer, tempDir, workspaceBin, sleep, type Person, type Server } from "./testing.ts";

/**
 * A bound folder's agent survives a restart (decision 036): its `retasc mcp proxy` keeps the MCP
 * session /mcp handed it, so the claims made through it are that session's; when the agent dies
 * and a new one starts in the folder, the new proxy moves the dead one's live claims to its own
 * session by their tokens, and the new agent resumes at once instead of waiting for the lease to
 * lapse. A second agent started while the first still runs is a sibling: it takes nothing.
 */
let server: Server;
let ada: Person;
let repo: string;
let observer: Client;
const agents: ChildProcess[] = [];
const PATH = `${path.dirname(workspaceBin)}${path.delimiter}${process.env.PATH}`;
const sdkClient = createRequire(import.meta.url).resolve("@modelcontextprotocol/sdk/client/index.js");
const sdkStdio = createRequire(import.meta.url).resolve("@modelcontextprotocol/sdk/client/stdio.js");

/**
 * An agent in the folder: starts the server its .mcp.json names (MCP_LAUNCH: folderLaunch); with CLAIM set it claims the next
 * issue, else it asks check_claim about WATCH until it holds it (or 8 s pass) and then, with FINISH,
 * gets its token back from its own session (a tokenless claim_issue) and finishes. Prints one JSON line.
 */
const agentScript = `
import fs from "node:fs";
const { Client } = await import(${JSON.stringify(sdkClient)});
const { StdioClientTransport } = await import(${JSON.stringify(sdkStdio)});
const entry = JSON.parse(process.env.MCP_LAUNCH);
const transport = new StdioClientTransport({ command: entry.command, args: entry.args, cwd: process.cwd(), env: process.env, stderr: "inherit" });
const client = new Client({ name: "restarting-agent", version: "1.0.0" });
await client.connect(transport);
const call = async (name, args) => (await client.callTool({ name, arguments: args })).structuredContent;
const out = { proxyPid: transport.pid };
if (process.env.CLAIM) out.claim = await call("next_issue", {});
else {
  const until = Date.now() + 8000;
  do {
    out.check = await call("check_claim", { identifier: process.env.WATCH });
    if (out.check.status === "held") break;
    await new Promise((r) => setTimeout(r, 200));
  } while (Date.now() < until);
  if (process.env.FINISH && out.check.status === "held") {
    out.heartbeat = await call("heartbeat", { identifier: process.env.WATCH });
    const back = await call("claim_issue", { identifier: process.env.WATCH });
    out.finished = await call("save_issue", { identifier: process.env.WATCH, status: "done", claimToken: back.claimToken });
  }
}
process.stdout.write(JSON.stringify(out) + "\\n");
setInterval(() => {}, 1 << 30);
`;

beforeAll(async () => {
  server = await startServer({ LEASE_TTL_SECONDS: "60" });
  ({ person: ada, repo, client: observer } = await boundFolder(server, "Ada"));
});
afterAll(async () => {
  for (const agent of agents) agent.kill("SIGKILL");
  await observer?.close();
  await server?.close();
  removeTemps();
});

const tool = async (name: string, args: Record<string, unknown> = {}): Promise<any> => (await observer.callTool({ name, arguments: args })).structuredContent;

async function startAgent(env: Record<string, string>): Promise<{ agent: ChildProcess; out: any }> {
  const script = path.join(tempDir("retasc-agent-"), "agent.mjs");
  fs.writeFileSync(script, agentScript);
  const agent = spawn(process.execPath, [script], { cwd: repo, env: cliEnv(ada, { PATH, MCP_LAUNCH: JSON.stringify(folderLaunch(repo, workspaceBin)), ...env }), stdio: ["ignore", "pipe", "inherit"] });
  agents.push(agent);
  const out = await new Promise((resolve, reject) => {
    let text = "";
    agent.stdout!.on("data", (d) => {
      text += d;
      if (text.includes("\n")) resolve(JSON.parse(text));
    });
    agent.on("exit", (code) => reject(new Error(`the agent exited with ${code}`)));
  });
  return { agent, out };
}

async function kill(agent: ChildProcess, proxyPid: number) {
  agent.kill("SIGKILL");
  const deadline = Date.now() + 10_000;
  while (alive(proxyPid) && Date.now() < deadline) await sleep(100);
  expect(alive(proxyPid)).toBe(false);
}

it("a sibling started while the agent runs takes nothing; after the agent dies, the next one resumes its claim at once, same fence, and finishes it", { timeout: 120_000 }, async () => {
  const filed = await tool("save_issue", { title: "Survive a restart", work: true, changeType: "feat", noDependency: "restart test", priority: 1 });
  const first = await startAgent({ CLAIM: "1" });
  expect(first.out.claim).toMatchObject({ identifier: filed.identifier, renewal: "calls" });

  const sibling = await startAgent({ WATCH: filed.identifier });
  expect(sibling.out.check).toMatchObject({ status: "other_session", youHold: false, yourKey: true });
  expect(await tool("get_issue", { identifier: filed.identifier })).toMatchObject({ held: true, fence: first.out.claim.fence });
  await kill(sibling.agent, sibling.out.proxyPid);

  await kill(first.agent, first.out.proxyPid);
  const restartedAt = Date.now();
  const next = await startAgent({ WATCH: filed.identifier, FINISH: "1" });
  expect(next.out.check).toMatchObject({ status: "held", youHold: true, renewedByYourCalls: true, fence: first.out.claim.fence });
  expect(next.out.heartbeat).toMatchObject({ fence: first.out.claim.fence });
  expect(next.out.finished).toMatchObject({ identifier: filed.identifier, status: "done" });
  // Long before the 60 s lease could have lapsed.
  expect(Date.now() - restartedAt).toBeLessThan(30_000);
  const lease = await tool("get_issue", { identifier: filed.identifier });
  expect(lease).toMatchObject({ status: "done", fence: first.out.claim.fence });
});
