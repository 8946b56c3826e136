import { spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { cliEnv, connectAsFolder, gitRepo, launchBrowser, loginThroughDevice, removeTemps, retasc, signUp, startE2eApp, tempDir, tool, type E2eApp, type Person } from "./harness.ts";

/**
 * A new user's first steps with the CLI as installed from the server itself (`npm install -g
 * <origin>/cli/latest`), not the workspace's link, on a machine whose npm reaches no registry:
 * `retasc login` approved on /device in Chromium, `retasc bind` in a fresh repository, and the
 * committed .mcp.json and .retasc.json working in a teammate's clone on another HOME once they
 * bind there: the .mcp.json runs the proxy through `npx -y <origin>/cli/latest`, with no install.
 */
let app: E2eApp;
let browser: Browser;
let bin: string;
let installedPath: string;
const cliVersion = (JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "../cli/package.json"), "utf8")) as { version: string }).version;

/** npm on a machine with only Node and the server: its own cache and prefix, and a registry that does not answer. */
const npmEnv = (prefix: string): Record<string, string> => ({
  npm_config_cache: path.join(prefix, ".npm-cache"),
  npm_config_prefix: prefix,
  npm_config_registry: "http://127.0.0.1:9/",
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_update_notifier: "false",
});

beforeAll(async () => {
  [app, browser] = await Promise.all([startE2eApp(), launchBrowser()]);
  const prefix = tempDir("retasc-prefix-");
  const install = spawnSync("npm", ["install", "-g", `${app.url}/cli/latest`], { cwd: prefix, encoding: "utf8", env: { ...process.env, ...npmEnv(prefix) } });
  expect(install.status, install.stderr).toBe(0);
  bin = path.join(prefix, "bin", "retasc");
  installedPath = `${path.dirname(bin)}${path.delimiter}${process.env.PATH}`;
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  removeTemps();
});

/** A person on a machine of their own: their own HOME, the installed CLI first on PATH. */
function machine(person: Person): Record<string, string> {
  return { HOME: person.retascDir, PATH: installedPath };
}

test("installed tarball: login approved in Chromium, bind in a fresh repo, the committed files work for a teammate after they bind", async () => {
  const ada = await signUp(browser, app, "Ada");
  const login = await loginThroughDevice(ada, app, { bin, env: machine(ada) });
  expect(login.code, login.stderr).toBe(0);
  expect(login.stdout).toContain(`Signed in as Ada <${ada.email}>`);

  const repo = gitRepo();
  const bind = await retasc(ada, ["bind", "--org-name", "Acme", "--project", "Web", "--prefix", "WEB", "--json"], { cwd: repo, bin, env: machine(ada) });
  expect(bind.code, bind.stderr).toBe(0);
  const marker = fs.readFileSync(path.join(repo, ".mcp.json"), "utf8");
  // The proxy runs through npx from this server: a teammate's clone needs no install.
  expect(JSON.parse(marker)).toEqual({ mcpServers: { retasc: { type: "stdio", command: "npx", args: ["-y", `${app.url}/cli/latest`, "mcp", "proxy"] } } });
  const agent = await connectAsFolder(ada, repo, machine(ada));
  expect(await tool(agent, "save_issue", { title: "Serve a health page", work: true, changeType: "feat", noDependency: "first issue" })).toMatchObject({ identifier: "WEB-1" });
  await agent.close();

  const invite = await retasc(ada, ["members", "invite", "--json"], { cwd: repo, bin, env: machine(ada) });
  const { link } = JSON.parse(invite.stdout);

  const bob = await signUp(browser, app, "Bob");
  expect((await loginThroughDevice(bob, app, { bin, env: machine(bob) })).code).toBe(0);
  expect((await retasc(bob, ["join", link, "--no-bind"], { bin, env: machine(bob) })).code).toBe(0);
  const clone = gitRepo();
  for (const file of [".mcp.json", ".retasc.json"]) fs.copyFileSync(path.join(repo, file), path.join(clone, file));
  const bobBind = await retasc(bob, ["bind"], { cwd: clone, bin, env: machine(bob) });
  expect(bobBind.code, bobBind.stderr).toBe(0);
  expect(fs.readFileSync(path.join(clone, ".mcp.json"), "utf8")).toBe(marker);
  // Bob's agent runs the committed command as written, with no CLI installed on his PATH and no registry.
  const bobAgent = new Client({ name: "bob's agent", version: "1.0.0" });
  const { command, args } = JSON.parse(marker).mcpServers.retasc;
  const env = { ...cliEnv(bob), ...npmEnv(bob.retascDir), HOME: bob.retascDir, PATH: `${path.dirname(process.execPath)}${path.delimiter}/usr/bin${path.delimiter}/bin` } as Record<string, string>;
  expect(spawnSync("retasc", ["--version"], { env }).error, "no retasc on Bob's PATH").toBeDefined();
  await bobAgent.connect(new StdioClientTransport({ command, args, cwd: clone, env, stderr: "pipe" }));
  expect(await tool(bobAgent, "whoami")).toMatchObject({ project: { prefix: "WEB" }, human: { email: bob.email } });
  expect(await tool(bobAgent, "next_issue")).toMatchObject({ identifier: "WEB-1" });
  await bobAgent.close();
});

test("the server serves its CLI: npx runs it with no install, latest.json names it, update and doctor compare with it", async () => {
  const latest = await fetch(`${app.url}/cli/latest`, { redirect: "manual" });
  expect(latest.status).toBe(302);
  expect(latest.headers.get("location")).toBe(`/cli/retasc-cli-${cliVersion}.tgz`);
  expect(await (await fetch(`${app.url}/cli/latest.json`)).json()).toEqual({
    version: cliVersion,
    url: `${app.url}/cli/retasc-cli-${cliVersion}.tgz`,
    install: `npm install -g ${app.url}/cli/latest`,
  });
  expect((await fetch(`${app.url}/cli/retasc-cli-0.0.1.tgz`)).status).toBe(404);

  // A fresh machine: only Node, the server's URL and no registry.
  const home = tempDir("retasc-npx-");
  const npx = spawnSync("npx", ["-y", `${app.url}/cli/latest`, "--version"], { cwd: home, encoding: "utf8", env: { ...process.env, ...npmEnv(home), HOME: home } });
  expect(npx.status, npx.stderr).toBe(0);
  expect(npx.stdout.trim()).toBe(cliVersion);

  const ada = { retascDir: tempDir("retasc-home-") };
  const current = await retasc(ada, ["update", "--url", app.url, "--json"], { bin, env: { PATH: installedPath } });
  expect(current.code, current.stderr).toBe(0);
  expect(JSON.parse(current.stdout)).toMatchObject({ updated: false, version: cliVersion });

  // A server serving a newer version: update installs it (its tarball is this server's), doctor says so first.
  const newer = http.createServer((req, res) => {
    if (req.url === "/healthz") return res.end("ok");
    if (req.url !== "/cli/latest.json") return res.writeHead(404).end();
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ version: "99.0.0", url: `${app.url}/cli/retasc-cli-${cliVersion}.tgz`, install: "npm install -g …" }));
  });
  await new Promise<void>((resolve) => newer.listen(0, "127.0.0.1", resolve));
  const newerUrl = `http://127.0.0.1:${(newer.address() as AddressInfo).port}`;
  try {
    const doctor = await retasc(ada, ["doctor", "--url", newerUrl, "--json"], { bin, env: { PATH: installedPath } });
    const checks = JSON.parse(doctor.stdout).checks as { check: string; ok: boolean; detail: string }[];
    expect(checks.find((c) => c.check === "the CLI is current")).toEqual({
      check: "the CLI is current",
      ok: false,
      detail: `${cliVersion}, the server serves 99.0.0: run \`retasc update\``,
    });
    const prefix = path.dirname(path.dirname(bin));
    const updated = await retasc(ada, ["update", "--url", newerUrl, "--json"], { bin, env: { PATH: installedPath, ...npmEnv(prefix) } });
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ updated: true, from: cliVersion, version: "99.0.0" });
  } finally {
    newer.close();
  }
});
