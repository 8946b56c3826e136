import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { folderLaunch } from "../../server/testing/mcp-marker.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliEnv, gitRepo, login, removeTemps, retasc, signUp, startServer, tempDir, workspaceBin, type Person, type Server } from "./testing.ts";

/**
 * A folder's wiring is safe to commit: `.mcp.json` runs `retasc` from PATH and `.retasc.json`
 * names the deployment, org and project, so a teammate who clones the folder on another HOME
 * binds once and the same files work there. `retasc doctor` says when a `.mcp.json` would not.
 */
let server: Server;
let ada: Person;
let bob: Person;
let repo: string;
const PATH = `${path.dirname(workspaceBin)}${path.delimiter}${process.env.PATH}`;

beforeAll(async () => {
  server = await startServer();
  [ada, bob] = await Promise.all([signUp(server, "Ada"), signUp(server, "Bob")]);
  expect((await login(server, ada)).code).toBe(0);
  expect((await login(server, bob)).code).toBe(0);
  repo = gitRepo();
});
afterAll(async () => {
  await server?.close();
  removeTemps();
});

/** Connects as Claude Code would from `folder`: the command its .mcp.json names, run there. */
async function connectAsFolder(person: Person, folder: string): Promise<Client> {
  const entry = folderLaunch(folder, workspaceBin);
  expect(entry.type).toBe("stdio");
  const client = new Client({ name: "test-agent", version: "1.0.0" });
  const env = cliEnv(person, { PATH });
  await client.connect(new StdioClientTransport({ command: entry.command, args: entry.args, cwd: folder, env: env as Record<string, string>, stderr: "pipe" }));
  return client;
}

describe("a committable .mcp.json", () => {
  it("holds no absolute path and no machine-local id; .retasc.json names the server, org and project", async () => {
    const bind = await retasc(ada, ["bind", "--org-name", "Acme", "--project", "Web", "--prefix", "WEB", "--json"], { cwd: repo, env: { PATH } });
    expect(bind.code, bind.stderr).toBe(0);
    const bound = JSON.parse(bind.stdout);
    expect(bound).toMatchObject({ transport: "proxy", prefix: "WEB" });
    const marker = JSON.parse(fs.readFileSync(path.join(repo, ".mcp.json"), "utf8"));
    // The server serves its CLI, so a clone needs no install: npx runs it from there.
    expect(marker).toEqual({ mcpServers: { retasc: { type: "stdio", command: "npx", args: ["-y", `${server.url}/cli/latest`, "mcp", "proxy"] } } });
    const project = JSON.parse(fs.readFileSync(path.join(repo, ".retasc.json"), "utf8"));
    expect(project).toEqual({ url: server.url, orgId: bound.orgId, projectId: bound.projectId, prefix: "WEB" });
    for (const text of [JSON.stringify(marker), JSON.stringify(project)]) {
      expect(text).not.toContain(repo);
      expect(text).not.toContain(ada.home);
      expect(text).not.toContain(process.execPath);
      expect(text).not.toMatch(/ws_[0-9a-f]+|rtsc_/);
    }
    const doctor = await retasc(ada, ["doctor", "--json"], { cwd: repo, env: { PATH } });
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(JSON.parse(doctor.stdout).checks).toEqual(expect.arrayContaining([expect.objectContaining({ check: ".mcp.json works on another machine", ok: true })]));

    const agent = await connectAsFolder(ada, repo);
    const who = await agent.callTool({ name: "whoami", arguments: {} });
    expect(who.structuredContent).toMatchObject({ org: { name: "Acme" }, project: { prefix: "WEB" }, human: { email: ada.email } });
    await agent.close();
  });

  it("bind installs a pre-commit hook that refuses a commit putting an agent key in a folder file, naming the file and never the key", async () => {
    expect(fs.readFileSync(path.join(repo, ".git", "hooks", "pre-commit"), "utf8")).toContain("exec retasc hook pre-commit");
    const commit = (...args: string[]) =>
      spawnSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=T", ...args], { cwd: repo, encoding: "utf8", env: cliEnv(ada, { PATH }) as NodeJS.ProcessEnv });
    expect(commit("add", ".mcp.json", ".retasc.json").status).toBe(0);
    const clean = commit("commit", "-qm", "wire the folder");
    expect(clean.status, clean.stderr).toBe(0);

    const key = (await retasc(ada, ["mcp", "key"], { cwd: repo })).stdout.trim();
    fs.mkdirSync(path.join(repo, ".cursor"), { recursive: true });
    const cursor = path.join(repo, ".cursor", "mcp.json");
    fs.writeFileSync(cursor, JSON.stringify({ mcpServers: { retasc: { url: `${server.url}/mcp`, headers: { Authorization: `Bearer ${key}` } } } }));
    commit("add", ".cursor/mcp.json");
    const refused = commit("commit", "-qm", "cursor");
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`KEY_IN_COMMIT: .cursor/mcp.json holds an agent key (${key.slice(0, 8)}…)`);
    expect(refused.stderr + refused.stdout).not.toContain(key);

    // What bind prints for Cursor: a reference to the exported key, which holds none.
    fs.writeFileSync(cursor, JSON.stringify({ mcpServers: { retasc: { url: `${server.url}/mcp`, headers: { Authorization: "Bearer ${env:RETASC_MCP_KEY}" } } } }));
    commit("add", ".cursor/mcp.json");
    const referenced = commit("commit", "-qm", "cursor");
    expect(referenced.status, referenced.stderr).toBe(0);
  });

  it("works unchanged in a teammate's clone on another HOME once they bind there", async () => {
    const invite = await retasc(ada, ["members", "invite", "--json"], { cwd: repo });
    expect(invite.code, invite.stderr).toBe(0);
    const { link } = JSON.parse(invite.stdout);
    const joined = await retasc(bob, ["join", link, "--no-bind", "--json"]);
    expect(joined.code, joined.stderr).toBe(0);

    const clone = gitRepo();
    for (const file of [".mcp.json", ".retasc.json"]) fs.copyFileSync(path.join(repo, file), path.join(clone, file));
    const before = fs.readFileSync(path.join(clone, ".mcp.json"), "utf8");
    const unbound = await retasc(bob, ["whoami"], { cwd: clone });
    expect(unbound.stdout).toContain("This folder: not bound");

    // No flags: the committed .retasc.json says which org and project (and which server: no --url).
    const bind = await retasc(bob, ["bind", "--json"], { cwd: clone, env: { PATH } });
    expect(bind.code, bind.stderr).toBe(0);
    expect(JSON.parse(bind.stdout)).toMatchObject({ orgName: "Acme", prefix: "WEB", mcpUrl: `${server.url}/mcp` });
    expect(fs.readFileSync(path.join(clone, ".mcp.json"), "utf8")).toBe(before);

    const agent = await connectAsFolder(bob, clone);
    const who = await agent.callTool({ name: "whoami", arguments: {} });
    expect(who.structuredContent).toMatchObject({ project: { prefix: "WEB" }, human: { email: bob.email } });
    await agent.close();
  });

  it("doctor reports a .mcp.json that would not work on another machine, and a URL that is not the binding's", async () => {
    const folder = gitRepo();
    const bind = await retasc(ada, ["bind", "--org-name", "Acme", "--project", "WEB", "--transport", "http", "--json"], { cwd: folder, env: { PATH } });
    expect(bind.code, bind.stderr).toBe(0);
    const marker = path.join(folder, ".mcp.json");
    expect(JSON.parse(fs.readFileSync(marker, "utf8")).mcpServers.retasc).toEqual({ type: "http", url: `${server.url}/mcp`, headersHelper: "retasc mcp headers" });
    expect((await retasc(ada, ["doctor"], { cwd: folder, env: { PATH } })).code).toBe(0);

    // What earlier CLIs wrote: this machine's node and CLI paths, and a keystore id.
    const helper = `"${process.execPath}" "${workspaceBin}" mcp headers --workspace ws_0123456789abcdef`;
    fs.writeFileSync(marker, JSON.stringify({ mcpServers: { retasc: { type: "http", url: "http://127.0.0.1:9/mcp", headersHelper: helper } } }));
    const doctor = await retasc(ada, ["doctor", "--json"], { cwd: folder, env: { PATH } });
    expect(doctor.code).toBe(1);
    const checks = JSON.parse(doctor.stdout).checks as { check: string; ok: boolean; detail: string }[];
    const failed = Object.fromEntries(checks.filter((c) => !c.ok).map((c) => [c.check, c.detail]));
    expect(failed[".mcp.json works on another machine"]).toContain("headersHelper names an absolute path");
    expect(failed[".mcp.json works on another machine"]).toContain("names ws_0123456789abcdef, a keystore entry of the machine that wrote it");
    expect(failed[".mcp.json's URL is the binding's"]).toBe(`.mcp.json says http://127.0.0.1:9/mcp, the key works at ${server.url}/mcp: run \`retasc bind\` here`);
    expect(doctor.stderr).toContain("✗ UNHEALTHY");
    // The key is not handed to a URL it was not bound for.
    const headers = await retasc(ada, ["mcp", "headers"], { cwd: folder });
    expect(headers).toMatchObject({ code: 1, stdout: "" });
    expect(headers.stderr).toContain(`✗ URL_MISMATCH: ${marker} (its "retasc" server) names http://127.0.0.1:9, but this folder's key was bound with ${server.url}`);

    // bind again rewrites it the portable way, keeping the key.
    const again = await retasc(ada, ["bind", "--org-name", "Acme", "--project", "WEB", "--transport", "http", "--json"], { cwd: folder, env: { PATH } });
    expect(JSON.parse(again.stdout)).toMatchObject({ unchanged: true });
    expect(JSON.parse(fs.readFileSync(marker, "utf8")).mcpServers.retasc.headersHelper).toBe("retasc mcp headers");
    expect((await retasc(ada, ["doctor"], { cwd: folder, env: { PATH } })).code).toBe(0);
  });

  it("bind --setup --url remembers the server for doctor, config and the rest; mcp config > file writes the blocks", async () => {
    const { projectId } = JSON.parse(fs.readFileSync(path.join(repo, ".retasc.json"), "utf8"));
    // What the Dash's Keys page does on "Get a setup code".
    const page = await fetch(`${server.url}/dash/settings/keys`, {
      method: "POST",
      headers: { cookie: ada.cookie, origin: server.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ intent: "setup", projectId }),
    });
    const code = /rtscsetup_[A-Za-z0-9_-]+/.exec(await page.text())?.[0];
    expect(code, `the Keys page answered ${page.status}`).toBeTruthy();

    const home = tempDir("retasc-headless-");
    const headless = { home, retascDir: path.join(home, ".retasc") };
    const folder = gitRepo();
    const bind = await retasc(headless, ["bind", "--setup", code!, "--url", server.url, "--json"], { cwd: folder, env: { PATH } });
    expect(bind.code, bind.stderr).toBe(0);
    // Anywhere on this machine now, not just in the folder: no --url, no RETASC_DEPLOYMENT_URL.
    const config = await retasc(headless, ["config", "--json"], { cwd: tempDir("retasc-elsewhere-") });
    expect(JSON.parse(config.stdout)).toMatchObject({ deploymentUrl: server.url });
    const doctor = await retasc(headless, ["doctor", "--json"], { cwd: folder, env: { PATH } });
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(JSON.parse(doctor.stdout).checks).toContainEqual({ check: "server reachable", ok: true, detail: server.url });

    const blocks = await retasc(headless, ["mcp", "config"], { cwd: folder });
    expect(blocks).toMatchObject({ code: 0, stderr: "" });
    expect(blocks.stdout).toContain(`[mcp_servers.retasc]\nurl = "${server.url}/mcp"`);
    expect(blocks.stdout).toContain("# Cursor (.cursor/mcp.json)");
    const json = await retasc(headless, ["mcp", "config", "--json"], { cwd: folder });
    expect(Object.keys(JSON.parse(json.stdout)).sort()).toEqual(["cline", "codex", "cursor", "gemini", "opencode"]);
  });
});
