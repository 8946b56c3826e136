import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { connectAsFolder, gitRepo, launchBrowser, loginThroughDevice, removeTemps, retasc, signUp, startE2eApp, tempDir, tool, type E2eApp, type Person } from "./harness.ts";

/**
 * A new user's first steps with the CLI as installed from the packed tarball, not the
 * workspace's link: `retasc login` approved on /device in Chromium, `retasc bind` in a fresh
 * repository, and the committed .mcp.json and .retasc.json working in a teammate's clone on
 * another HOME once they bind there.
 */
let app: E2eApp;
let browser: Browser;
let bin: string;
let installedPath: string;

beforeAll(async () => {
  [app, browser] = await Promise.all([startE2eApp(), launchBrowser()]);
  const cli = path.resolve(import.meta.dirname, "../cli");
  const packed = tempDir("retasc-pack-");
  const name = execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", packed], { cwd: cli, encoding: "utf8" }).trim();
  const prefix = tempDir("retasc-prefix-");
  const install = spawnSync("npm", ["install", "-g", "--prefix", prefix, "--prefer-offline", "--no-audit", "--no-fund", path.join(packed, name)], { cwd: prefix, encoding: "utf8" });
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
  expect(JSON.parse(marker)).toEqual({ mcpServers: { retasc: { type: "stdio", command: "retasc", args: ["mcp", "proxy"] } } });
  const agent = await connectAsFolder(ada, repo, machine(ada));
  expect(await tool(agent, "save_issue", { title: "Serve a health page", work: true, noDependency: "first issue" })).toMatchObject({ identifier: "WEB-1" });
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
  const bobAgent = await connectAsFolder(bob, clone, machine(bob));
  expect(await tool(bobAgent, "whoami")).toMatchObject({ project: { prefix: "WEB" }, human: { email: bob.email } });
  expect(await tool(bobAgent, "next_issue")).toMatchObject({ identifier: "WEB-1" });
  await bobAgent.close();
});
