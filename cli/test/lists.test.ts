import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { gitRepo, login, removeTemps, retasc, signUp, startServer, type Person, type Server } from "./testing.ts";

/**
 * The list commands read a paged list to its end against the real server: `key list` and
 * `members list` (its members and its invites) past the server's 200 a page, `issue list` past list_issues' 50, each item once,
 * the table printed as the pages arrive; `--limit` caps the issues in all.
 */
let server: Server;
let ada: Person;
let repo: string;
let agent: Client;

const KEYS = 205;
const ISSUES = 61;
const INVITES = 203;

beforeAll(async () => {
  server = await startServer();
  ada = await signUp(server, "Ada");
  expect((await login(server, ada)).code).toBe(0);
  repo = gitRepo();
  const bind = await retasc(ada, ["bind", "--org-name", "Acme", "--project", "Web", "--prefix", "WEB"], { cwd: repo });
  expect(bind.code, bind.stderr).toBe(0);
  // The keys through the Dash's form, as a person mints them (the CLI prints each secret).
  for (let i = 0; i < KEYS; i++) {
    const minted = await fetch(`${server.url}/dash/settings/keys.data`, {
      method: "POST",
      headers: { cookie: ada.cookie, origin: server.url },
      body: new URLSearchParams({ intent: "mint", runtime: `bulk-${i}` }),
    });
    expect(minted.status).toBe(200);
  }
  for (let i = 0; i < INVITES; i++) {
    const invited = await fetch(`${server.url}/dash/settings/members.data`, {
      method: "POST",
      headers: { cookie: ada.cookie, origin: server.url },
      body: new URLSearchParams({ intent: "invite", email: `invitee-${i}@example.com` }),
    });
    expect(invited.status).toBe(200);
  }
  const key = (await retasc(ada, ["mcp", "key"], { cwd: repo })).stdout.trim();
  agent = new Client({ name: "filer", version: "1.0.0" });
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  for (let i = 0; i < ISSUES; i++) await agent.callTool({ name: "save_issue", arguments: { title: `Work ${i}`, work: true, changeType: "feat", noDependency: "bulk" } });
}, 300_000);
afterAll(async () => {
  await agent?.close();
  await server?.close();
  removeTemps();
});

const json = (result: { stdout: string; stderr: string; code: number | null }) => {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};

it("key list and members list read every page: each key and agent once, in the table too", async () => {
  const { keys } = json(await retasc(ada, ["key", "list", "--json"], { cwd: repo })) as { keys: { keyId: string; runtime: string }[] };
  // The folder's key from bind, and the ones minted.
  expect(keys).toHaveLength(KEYS + 1);
  expect(new Set(keys.map((k) => k.keyId)).size).toBe(KEYS + 1);
  const table = await retasc(ada, ["key", "list"], { cwd: repo });
  expect(table.code, table.stderr).toBe(0);
  for (const k of keys) expect(table.stdout).toContain(k.keyId);
  expect(table.stdout.match(/^KEY /gm)).toHaveLength(1);

  const { members } = json(await retasc(ada, ["members", "list", "--json"], { cwd: repo })) as { members: { kind: string; memberId: string }[] };
  expect(members.filter((m) => m.kind === "human")).toHaveLength(1);
  expect(members.filter((m) => m.kind === "agent")).toHaveLength(KEYS + 1);
  expect(new Set(members.map((m) => m.memberId)).size).toBe(members.length);
  const listed = await retasc(ada, ["members", "list"], { cwd: repo });
  for (const m of members) expect(listed.stdout).toContain(m.memberId);
});

it("members list reads every page of invites, and the Members page links from one page of invites to the next without JavaScript", async () => {
  const { invites } = json(await retasc(ada, ["members", "list", "--json"], { cwd: repo })) as { invites: { inviteId: string }[] };
  expect(invites).toHaveLength(INVITES);
  expect(new Set(invites.map((i) => i.inviteId)).size).toBe(INVITES);
  const table = await retasc(ada, ["members", "list"], { cwd: repo });
  for (const i of invites) expect(table.stdout).toContain(i.inviteId);

  const seen: string[] = [];
  let next: string | undefined = "/dash/settings/members";
  let pages = 0;
  while (next) {
    const html = await (await fetch(`${server.url}${next}`, { headers: { cookie: ada.cookie } })).text();
    seen.push(...[...html.matchAll(/name="inviteId" value="([^"]+)"/g)].map((m) => m[1]!));
    next = /href="([^"]+)"[^>]*>Older invites</.exec(html)?.[1]?.replaceAll("&amp;", "&");
    pages++;
  }
  // 50 a Dash page.
  expect(pages).toBe(Math.ceil(INVITES / 50));
  expect(seen).toEqual(invites.map((i) => i.inviteId));
});

it("issue list reads every page to the end, and --limit caps it in all", async () => {
  const { issues } = json(await retasc(ada, ["issue", "list", "--json"], { cwd: repo })) as { issues: { identifier: string }[] };
  expect(issues).toHaveLength(ISSUES);
  expect(new Set(issues.map((i) => i.identifier)).size).toBe(ISSUES);
  const capped = json(await retasc(ada, ["issue", "list", "--limit", "55", "--json"], { cwd: repo })) as { issues: { identifier: string }[] };
  expect(capped.issues.map((i) => i.identifier)).toEqual(issues.slice(0, 55).map((i) => i.identifier));
  const table = await retasc(ada, ["issue", "list"], { cwd: repo });
  for (const i of issues) expect(table.stdout).toContain(i.identifier);
});
