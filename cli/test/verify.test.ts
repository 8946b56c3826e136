import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { gitRepo, login, removeTemps, retasc, signUp, startServer, type Person, type Server } from "./testing.ts";

/**
 * Verified finishes from the CLI against the built app over HTTP (decision 045): a person turns
 * verification on (`retasc project verification`) and mints a CI key (`retasc key mint --ci`);
 * CI attests with it (`retasc verify`, the key from RETASC_CI_KEY), which is what lets the
 * dependent of a pending finish be claimed; the CI key is refused at /mcp.
 */
let server: Server;
let ada: Person;
let agent: Client;
let projectId: string;
let orgId: string;

const json = (result: { stdout: string }) => JSON.parse(result.stdout);

beforeAll(async () => {
  server = await startServer();
  ada = await signUp(server, "Ada");
  expect((await login(server, ada)).code).toBe(0);
  const repo = gitRepo();
  const bind = await retasc(ada, ["bind", "--org-name", "Acme", "--project", "Web", "--prefix", "WEB"], { cwd: repo });
  expect(bind.code, bind.stderr).toBe(0);
  const key = (await retasc(ada, ["mcp", "key"], { cwd: repo })).stdout.trim();
  agent = new Client({ name: "filer", version: "1.0.0" });
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  const me = (await agent.callTool({ name: "whoami", arguments: {} })).structuredContent as { org: { id: string }; project: { id: string } };
  orgId = me.org.id;
  projectId = me.project.id;
});
afterAll(async () => {
  await agent?.close();
  await server?.close();
  removeTemps();
});

const tool = async (name: string, args: Record<string, unknown> = {}): Promise<any> => (await agent.callTool({ name, arguments: args })).structuredContent;

it("project verification, key mint --ci and verify: CI's attestation lets the dependent of a pending finish start", async () => {
  const set = await retasc(ada, ["project", "verification", "--project-id", projectId, "--mode", "ci", "--checks", "test", "--window", "60", "--org-id", orgId, "--url", server.url]);
  expect(set.code, set.stderr).toBe(0);
  expect(set.stdout).toContain("WEB verifies finishes in CI: required checks test, stale after 60 minutes.");
  const minted = await retasc(ada, ["key", "mint", "--ci", "--project-id", projectId, "--org-id", orgId, "--url", server.url, "--json"]);
  expect(minted.code, minted.stderr).toBe(0);
  const ciKey = json(minted).key as string;
  expect(ciKey).toMatch(/^rtci_/);

  const blocker = (await tool("save_issue", { title: "Build it", work: true, changeType: "feat", noDependency: "a test" })).identifier as string;
  const dependent = (await tool("save_issue", { title: "Ship it", work: true, changeType: "feat", blockedBy: [blocker] })).identifier as string;
  const { claimToken } = await tool("claim_issue", { identifier: blocker });
  const commit = "abcdef0123456789abcdef0123456789abcdef01";
  expect(await tool("save_issue", { identifier: blocker, claimToken, status: "done", evidence: { commit } })).toMatchObject({ verification: "pending" });
  expect((await tool("claim_issue", { identifier: dependent })).error).toMatchObject({ code: "BLOCKED" });

  const ci = { RETASC_CI_KEY: ciKey, RETASC_DEPLOYMENT_URL: server.url };
  const without = await retasc(ada, ["verify", blocker, "--commit", commit, "--status", "pass", "--check", "test"], { env: { RETASC_DEPLOYMENT_URL: server.url } });
  expect(without.code).toBe(1);
  expect(without.stderr).toContain("RETASC_CI_KEY is not set");
  const attested = await retasc(ada, ["verify", blocker, "--commit", commit, "--status", "pass", "--check", "test", "--url", "https://ci.example.com/1"], { env: ci });
  expect(attested.code, attested.stderr).toBe(0);
  expect(attested.stdout).toContain(`${blocker}: test passed; verification is passed.`);
  expect(await tool("claim_issue", { identifier: dependent })).toMatchObject({ identifier: dependent });

  const refused = await fetch(`${server.url}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${ciKey}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  expect(refused.status).toBe(403);
});

it("project verification --quarantine-after and issue unquarantine: a person releases an issue its agents abandoned (decision 055); --release-stalled is set and unset (decision 062)", async () => {
  const set = await retasc(ada, ["project", "verification", "--project-id", projectId, "--mode", "off", "--quarantine-after", "1", "--release-stalled", "--org-id", orgId, "--url", server.url, "--json"]);
  expect(set.code, set.stderr).toBe(0);
  expect(json(set)).toMatchObject({ mode: "off", quarantineAfter: 1, releaseStalled: true });
  const unset = await retasc(ada, ["project", "verification", "--project-id", projectId, "--mode", "off", "--no-release-stalled", "--org-id", orgId, "--url", server.url]);
  expect(unset.code, unset.stderr).toBe(0);
  expect(unset.stdout).toContain("is marked stalled");
  const poison = (await tool("save_issue", { title: "Hangs every agent", work: true, changeType: "feat", noDependency: "a test" })).identifier as string;
  const { claimToken } = await tool("claim_issue", { identifier: poison });
  expect(await tool("release_issue", { identifier: poison, claimToken, note: "the suite hangs" })).toMatchObject({ status: "blocked" });
  expect((await tool("claim_issue", { identifier: poison })).error).toMatchObject({ code: "STATUS_NOT_CLAIMABLE" });

  const released = await retasc(ada, ["issue", "unquarantine", poison, "--org-id", orgId, "--url", server.url]);
  expect(released.code, released.stderr).toBe(0);
  expect(released.stdout).toContain(`${poison} is todo again`);
  expect(await tool("claim_issue", { identifier: poison })).toMatchObject({ identifier: poison });
  const again = await retasc(ada, ["issue", "unquarantine", poison, "--org-id", orgId, "--url", server.url]);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain("CONFLICT");
});

it("key mint --hosted --name: a key no watchdog will run for, whose claim replies say what renews them; a folder's key is told nothing", async () => {
  const both = await retasc(ada, ["key", "mint", "--hosted", "--ci", "--project-id", projectId, "--org-id", orgId, "--url", server.url]);
  expect(both.code).toBe(1);
  expect(both.stderr).toContain("✗ INVALID_INPUT: --ci and --hosted are two kinds of key");
  const wired = await retasc(ada, ["key", "mint", "--hosted", "--install", "--project-id", projectId, "--org-id", orgId, "--url", server.url]);
  expect(wired.code).toBe(1);
  expect(wired.stderr).toContain("✗ INVALID_INPUT: a hosted key is not wired into a folder");

  const minted = await retasc(ada, ["key", "mint", "--hosted", "--name", "nightly-runner", "--project-id", projectId, "--org-id", orgId, "--url", server.url]);
  expect(minted.code, minted.stderr).toBe(0);
  const hostedKey = minted.stdout.trim();
  expect(hostedKey).toMatch(/^rtsc_/);
  expect(minted.stderr).toContain(`Authorization: Bearer <key> to ${server.url}/mcp`);
  expect(minted.stderr).not.toContain(hostedKey);
  const listed = await retasc(ada, ["key", "list", "--org-id", orgId, "--url", server.url, "--json"]);
  expect(json(listed).keys).toEqual(expect.arrayContaining([expect.objectContaining({ name: "nightly-runner", hosted: true, runtime: "hosted" })]));
  expect((await retasc(ada, ["key", "list", "--org-id", orgId, "--url", server.url])).stdout).toMatch(/nightly-runner\s+hosted \(hosted\)/);
  // The Dash's Keys page mints one too.
  const dash = await fetch(`${server.url}/dash/settings/keys.data`, {
    method: "POST",
    headers: { cookie: ada.cookie, origin: server.url },
    body: new URLSearchParams({ intent: "mint", projectId, runtime: "codex-cloud", name: "cloud runner", hosted: "on" }),
  });
  expect(dash.status).toBe(200);
  expect(json(await retasc(ada, ["key", "list", "--org-id", orgId, "--url", server.url, "--json"])).keys).toContainEqual(expect.objectContaining({ name: "cloud runner", hosted: true, runtime: "codex-cloud" }));
  expect(await (await fetch(`${server.url}/dash/settings/keys`, { headers: { cookie: ada.cookie } })).text()).toContain("cloud runner");

  const hosted = new Client({ name: "hosted-runner", version: "1.0.0" });
  await hosted.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${hostedKey}` } } }));
  try {
    const [mine, theirs] = [
      (await tool("save_issue", { title: "Nightly dependency bump", work: true, changeType: "chore", noDependency: "a test" })).identifier as string,
      (await tool("save_issue", { title: "Rotate the staging certificates", work: true, changeType: "chore", noDependency: "a test" })).identifier as string,
    ];
    const claimed = await hosted.callTool({ name: "claim_issue", arguments: { identifier: mine } });
    const texts = (claimed.content as { text: string }[]).map((c) => c.text);
    expect(texts.at(-1)).toContain("Hosted key, no watchdog: every call of this MCP session renews this claim");
    const folders = await agent.callTool({ name: "claim_issue", arguments: { identifier: theirs } });
    expect((folders.content as { text: string }[]).map((c) => c.text).join("\n")).not.toContain("Hosted key");
  } finally {
    await hosted.close();
  }
});
