import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliEnv, gitRepo, removeTemps, retasc, tempDir, workspaceBin } from "./testing.ts";

/**
 * `retasc setup` (issue 32): the real CLI in a temporary HOME finds the harnesses whose config
 * folders exist, writes the watchdog proxy into each one's user-level file (every other key kept,
 * no key written, a second run changing nothing), `bind` runs it the first time, `doctor` reports
 * each; and the proxy those files start, in a folder that is not bound, answers keyless while a
 * stand-in server records that nothing reached it.
 */
const PATH = `${path.dirname(workspaceBin)}${path.delimiter}${process.env.PATH}`;
const proxy = { command: workspaceBin, args: ["mcp", "proxy"] };

interface StandIn {
  url: string;
  requests: { method: string; url: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

/** A server that records every request: it answers a setup code with a made-up key and 404 to the rest. */
async function startStandIn(): Promise<StandIn> {
  const state: StandIn = { url: "", requests: [], close: async () => {} };
  let minted = 0;
  const httpServer = http.createServer((req, res) => {
    state.requests.push({ method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization });
    req.resume();
    req.on("end", () => {
      res.writeHead(req.url === "/api/cli/setup" ? 200 : 404, { "content-type": "application/json" });
      if (req.url !== "/api/cli/setup") return res.end("{}");
      minted++;
      res.end(JSON.stringify({ key: `rtsc_${"k".repeat(30)}${minted}`, keyId: `key${minted}`, orgId: "org1", orgName: "Acme", projectId: `proj${minted}`, prefix: "WEB", runtime: "claude-code" }));
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  state.close = () => new Promise((resolve) => httpServer.close(() => resolve()));
  return state;
}

let standIn: StandIn;
beforeAll(async () => {
  standIn = await startStandIn();
});
afterAll(async () => {
  await standIn?.close();
  removeTemps();
});

function person() {
  const home = tempDir("retasc-setup-home-");
  return { home, retascDir: path.join(home, ".retasc") };
}

function write(file: string, text: string) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

const readJson = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"));

/** A home folder with all five harnesses, each file holding settings and servers of the person's own. */
function homeWithEveryHarness() {
  const who = person();
  const files = {
    claude: path.join(who.home, ".claude.json"),
    codex: path.join(who.home, ".codex", "config.toml"),
    cursor: path.join(who.home, ".cursor", "mcp.json"),
    opencode: path.join(who.home, ".config", "opencode", "opencode.json"),
    gemini: path.join(who.home, ".gemini", "settings.json"),
  };
  write(files.claude, JSON.stringify({ numStartups: 12, projects: { "/work/x": { allowedTools: [] } }, mcpServers: { docs: { type: "stdio", command: "docs-mcp", args: [], env: {} } } }, null, 2));
  write(files.codex, '# my Codex\nmodel = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\nargs = ["--port", "0"]\n\n[profiles.fast]\nmodel = "o4-mini"\n');
  write(files.cursor, JSON.stringify({ mcpServers: { browser: { command: "npx", args: ["-y", "browser-mcp"] } } }, null, 4));
  write(files.opencode, JSON.stringify({ $schema: "https://opencode.ai/config.json", theme: "opencode", mcp: { notes: { type: "remote", url: "https://notes.example/mcp" } } }, null, 2));
  write(files.gemini, JSON.stringify({ theme: "GitHub", mcpServers: { search: { httpUrl: "https://search.example/mcp" } } }, null, 2));
  return { who, files };
}

const snapshot = (files: Record<string, string>) => Object.fromEntries(Object.entries(files).map(([name, file]) => [name, { text: fs.readFileSync(file, "utf8"), mtime: fs.statSync(file).mtimeMs }]));

describe("retasc setup", () => {
  it("wires all five harnesses, keeps every other key, writes no key, and a second run changes nothing", async () => {
    const { who, files } = homeWithEveryHarness();
    const before = snapshot(files);

    const dry = await retasc(who, ["setup", "--dry-run", "--json"], { env: { PATH } });
    expect(dry.code, dry.stderr).toBe(0);
    const planned = JSON.parse(dry.stdout);
    expect(planned).toMatchObject({ dryRun: true, launch: proxy });
    expect(planned.harnesses.map((h: { id: string; action: string }) => [h.id, h.action])).toEqual([
      ["claude-code", "write"],
      ["codex", "write"],
      ["cursor", "write"],
      ["opencode", "write"],
      ["gemini", "write"],
    ]);
    expect(planned.harnesses[1].entry).toBe(`[mcp_servers.retasc]\ncommand = ${JSON.stringify(workspaceBin)}\nargs = ["mcp", "proxy"]`);
    expect(snapshot(files)).toEqual(before);
    expect(fs.existsSync(path.join(who.retascDir, "config.json"))).toBe(false);

    const run = await retasc(who, ["setup"], { env: { PATH } });
    expect(run.code, run.stderr).toBe(0);
    for (const name of ["Claude Code", "Codex", "Cursor", "OpenCode", "Gemini CLI"]) expect(run.stdout).toContain(`✓ ${name}: wired (`);

    expect(readJson(files.claude)).toEqual({
      numStartups: 12,
      projects: { "/work/x": { allowedTools: [] } },
      mcpServers: { docs: { type: "stdio", command: "docs-mcp", args: [], env: {} }, retasc: { type: "stdio", ...proxy } },
    });
    expect(fs.readFileSync(files.codex, "utf8")).toBe(
      `${before.codex!.text}\n[mcp_servers.retasc]\ncommand = ${JSON.stringify(workspaceBin)}\nargs = ["mcp", "proxy"]\n`,
    );
    expect(readJson(files.cursor)).toEqual({ mcpServers: { browser: { command: "npx", args: ["-y", "browser-mcp"] }, retasc: proxy } });
    // The file's own indentation is kept.
    expect(fs.readFileSync(files.cursor, "utf8")).toContain('\n    "mcpServers": {');
    expect(readJson(files.opencode)).toEqual({
      $schema: "https://opencode.ai/config.json",
      theme: "opencode",
      mcp: { notes: { type: "remote", url: "https://notes.example/mcp" }, retasc: { type: "local", command: [workspaceBin, "mcp", "proxy"], enabled: true } },
    });
    expect(readJson(files.gemini)).toEqual({ theme: "GitHub", mcpServers: { search: { httpUrl: "https://search.example/mcp" }, retasc: proxy } });
    for (const file of Object.values(files)) expect(fs.readFileSync(file, "utf8")).not.toMatch(/rt(sc|ci)_|RETASC_MCP_(KEY|URL)|Authorization/);
    expect(readJson(path.join(who.retascDir, "config.json")).setup).toMatchObject({ ...proxy, harnesses: ["claude-code", "codex", "cursor", "opencode", "gemini"] });

    // Again: every file as it was, byte for byte, not even rewritten.
    const wired = snapshot(files);
    const again = await retasc(who, ["setup"], { env: { PATH } });
    expect(again.code, again.stderr).toBe(0);
    for (const name of ["Claude Code", "Codex", "Cursor", "OpenCode", "Gemini CLI"]) expect(again.stdout).toContain(`✓ ${name}: already wired (`);
    expect(snapshot(files)).toEqual(wired);

    // doctor: each harness found and wired.
    const doctor = await retasc(who, ["doctor", "--json", "--url", standIn.url], { env: { PATH } });
    const checks = JSON.parse(doctor.stdout).checks as { check: string; ok: boolean; detail: string }[];
    for (const name of ["Claude Code", "Codex", "Cursor", "OpenCode", "Gemini CLI"]) {
      expect(checks.find((c) => c.check === `harness ${name}`)).toMatchObject({ ok: true, detail: expect.stringContaining(`found, wired: `) });
    }
  });

  it("leaves a harness that is not there, and a retasc server it did not write unless --replace; rewrites only the command of one whose CLI moved", async () => {
    const who = person();
    const cursor = path.join(who.home, ".cursor", "mcp.json");
    const theirs = { mcpServers: { retasc: { url: "https://retasc.example/mcp", headers: { Authorization: "Bearer ${env:RETASC_MCP_KEY}" } } } };
    write(cursor, JSON.stringify(theirs));
    const codex = path.join(who.home, ".codex", "config.toml");
    const moved = '[mcp_servers.retasc] # the tracker\ncommand = "/old/bin/retasc"\nargs = ["mcp", "proxy"]\nstartup_timeout_sec = 20\n\n[history]\npersistence = "none"\n';
    write(codex, moved);
    const gemini = path.join(who.home, ".gemini", "settings.json");
    write(gemini, '{\n  // comments: Gemini reads them, setup does not rewrite them\n  "theme": "GitHub"\n}\n');

    const doctorBefore = JSON.parse((await retasc(who, ["doctor", "--json", "--url", standIn.url], { env: { PATH } })).stdout).checks as { check: string; ok: boolean; detail: string }[];
    expect(doctorBefore.find((c) => c.check === "harness Codex")).toMatchObject({ ok: false, detail: "found, wired to /old/bin/retasc, which is not there: run `retasc setup`" });
    expect(doctorBefore.find((c) => c.check === "harness Cursor")).toMatchObject({ ok: true, detail: expect.stringContaining("`retasc setup --replace` replaces it") });
    expect(doctorBefore.find((c) => c.check === "harness Claude Code")).toMatchObject({ ok: true, detail: expect.stringContaining("not on this machine") });

    const run = await retasc(who, ["setup"], { env: { PATH } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("- Claude Code: not on this machine");
    expect(run.stdout).toContain("✗ Cursor:");
    expect(run.stdout).toContain("✗ Gemini CLI:");
    expect(run.stdout).toContain("is not plain JSON: add the entry by hand");
    expect(fs.existsSync(path.join(who.home, ".claude.json"))).toBe(false);
    expect(readJson(cursor)).toEqual(theirs);
    expect(fs.readFileSync(gemini, "utf8")).toContain("// comments");
    expect(fs.readFileSync(codex, "utf8")).toBe(moved.replace('"/old/bin/retasc"', JSON.stringify(workspaceBin)));

    const replace = await retasc(who, ["setup", "--replace"], { env: { PATH } });
    expect(replace.code, replace.stderr).toBe(0);
    expect(readJson(cursor)).toEqual({ mcpServers: { retasc: proxy } });
  });

  it("finds the harnesses where CLAUDE_CONFIG_DIR, CODEX_HOME and XDG_CONFIG_HOME put them", async () => {
    const who = person();
    const claudeDir = path.join(who.home, "claude-elsewhere");
    const codexHome = path.join(who.home, "codex-elsewhere");
    const config = path.join(who.home, "xdg");
    for (const dir of [claudeDir, codexHome, path.join(config, "opencode")]) fs.mkdirSync(dir, { recursive: true });
    // Their usual places hold nothing of these harnesses.
    fs.mkdirSync(path.join(who.home, ".codex"));
    const env = { PATH, CLAUDE_CONFIG_DIR: claudeDir, CODEX_HOME: codexHome, XDG_CONFIG_HOME: config };
    const run = await retasc(who, ["setup"], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(readJson(path.join(claudeDir, ".claude.json"))).toEqual({ mcpServers: { retasc: { type: "stdio", ...proxy } } });
    expect(fs.readFileSync(path.join(codexHome, "config.toml"), "utf8")).toBe(`[mcp_servers.retasc]\ncommand = ${JSON.stringify(workspaceBin)}\nargs = ["mcp", "proxy"]\n`);
    expect(readJson(path.join(config, "opencode", "opencode.json"))).toEqual({ mcp: { retasc: { type: "local", command: [workspaceBin, "mcp", "proxy"], enabled: true } } });
    expect(fs.readdirSync(path.join(who.home, ".codex"))).toEqual([]);
    expect(fs.existsSync(path.join(who.home, ".claude.json"))).toBe(false);
  });

  it("--help says what it writes where", async () => {
    const help = await retasc(person(), ["setup", "--help"]);
    expect(help.code).toBe(0);
    for (const text of ["--dry-run", "--replace", "~/.claude.json", "~/.codex/config.toml", "~/.cursor/mcp.json", "opencode.json", "~/.gemini/settings.json", "retasc bind"]) expect(help.stdout).toContain(text);
    expect((await retasc(person(), ["--help"])).stdout).toMatch(/\n {2}setup +wire the watchdog proxy/);
  });
});

describe("the proxy setup wires, in a folder that is not bound", () => {
  it("answers initialize, tools/list and setup_status itself, refuses other tools with the command to run, and sends nothing anywhere", async () => {
    const { who, files } = homeWithEveryHarness();
    expect((await retasc(who, ["setup"], { env: { PATH } })).code).toBe(0);
    // The person has a key, for another folder, on the stand-in; the folder they open names the stand-in too.
    const elsewhere = gitRepo();
    fs.mkdirSync(who.retascDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(
      path.join(who.retascDir, "bindings.json"),
      JSON.stringify({
        workspaces: { ws_1: { path: elsewhere, url: standIn.url, orgId: "org1", orgName: "Acme", projectId: "proj-other", prefix: "OPS", keyId: "k1", key: `rtsc_${"s".repeat(32)}`, runtime: "claude-code", boundAt: new Date().toISOString() } },
        claims: {},
      }),
      { mode: 0o600 },
    );
    const folder = gitRepo();
    fs.writeFileSync(path.join(folder, ".retasc.json"), JSON.stringify({ url: standIn.url, orgId: "org1", projectId: "proj-web", prefix: "WEB" }));
    const seen = standIn.requests.length;

    // Started as Cursor starts it: the command and args of ~/.cursor/mcp.json, in the folder.
    const entry = readJson(files.cursor).mcpServers.retasc;
    const transport = new StdioClientTransport({ command: entry.command, args: entry.args, cwd: folder, env: cliEnv(who, { PATH }) as Record<string, string>, stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (d) => (stderr += d));
    const client = new Client({ name: "cursor-like", version: "1.0.0" });
    await client.connect(transport);
    try {
      expect(client.getInstructions()).toContain(`This folder (${folder}) is not bound to a Retasc project`);
      expect(client.getInstructions()).toContain("run `retasc bind` here");
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["setup_status"]);
      const status = await client.callTool({ name: "setup_status", arguments: {} });
      expect(status.isError).toBeFalsy();
      expect(status.structuredContent).toEqual({ state: "NOT_BOUND", folder, next: expect.stringContaining("run `retasc bind` here") });
      const refused = await client.callTool({ name: "next_issue", arguments: {} });
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({ error: { code: "NOT_BOUND", message: expect.stringContaining("next_issue needs a bound folder"), hint: expect.stringContaining("retasc bind") } });
    } finally {
      await client.close();
    }
    expect(stderr).toContain("NOT_BOUND");
    expect(standIn.requests.slice(seen)).toEqual([]);
  });
});

describe("bind runs setup the first time", () => {
  it("wires the harnesses found on the first bind, not on later ones; retasc setup puts an entry back", async () => {
    const who = person();
    fs.mkdirSync(path.join(who.home, ".cursor"), { recursive: true });
    fs.mkdirSync(path.join(who.home, ".gemini"), { recursive: true });
    const first = await retasc(who, ["bind", "--setup", "rtscsetup_first", "--url", standIn.url], { cwd: gitRepo(), env: { PATH } });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("The watchdog is wired into Cursor, Gemini CLI on this machine");
    expect(readJson(path.join(who.home, ".cursor", "mcp.json"))).toEqual({ mcpServers: { retasc: proxy } });
    expect(readJson(path.join(who.home, ".gemini", "settings.json"))).toEqual({ mcpServers: { retasc: proxy } });
    expect(readJson(path.join(who.retascDir, "config.json")).setup).toMatchObject({ harnesses: ["cursor", "gemini"] });

    // Removed by the person: a later bind leaves it removed.
    fs.writeFileSync(path.join(who.home, ".cursor", "mcp.json"), "{}\n");
    const second = await retasc(who, ["bind", "--setup", "rtscsetup_second", "--url", standIn.url, "--json"], { cwd: gitRepo(), env: { PATH } });
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout).setup).toBeUndefined();
    expect(fs.readFileSync(path.join(who.home, ".cursor", "mcp.json"), "utf8")).toBe("{}\n");
    const doctor = JSON.parse((await retasc(who, ["doctor", "--json", "--url", standIn.url], { env: { PATH } })).stdout).checks as { check: string; ok: boolean; detail: string }[];
    // Reported, not failed: a bound folder's .mcp.json wires it there.
    expect(doctor.find((c) => c.check === "harness Cursor")).toMatchObject({ ok: true, detail: expect.stringContaining("found, not wired at user level") });
    expect(doctor.find((c) => c.check === "harness Cursor")!.detail).toContain("`retasc setup` wires it");

    expect((await retasc(who, ["setup"], { env: { PATH } })).code).toBe(0);
    expect(readJson(path.join(who.home, ".cursor", "mcp.json"))).toEqual({ mcpServers: { retasc: proxy } });
    // The stand-in minted keys; none was ever sent to it.
    expect(standIn.requests.filter((r) => r.authorization !== undefined)).toEqual([]);
  });
});
