import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startApp, tempDataDir, type AppProcess } from "../server/testing/app-process.ts";
import { connectAsFolder, gitRepo, launchBrowser, loginThroughDevice, removeTemps, retasc, tempDir, tool, type E2eApp, type Person } from "./harness.ts";
import { eventually, screenshot, watchConsole } from "./dash-fixture.ts";

/**
 * The newcomer's path, walked as someone who has not read the README: the app as `npm start`
 * runs it (embedded mode on an empty data dir, whichever test driver is chosen), the start
 * banner, the home page, sign-up, the org and its first project, and the empty Fleet page,
 * whose commands are then run exactly as printed (the CLI installed from a copy of the clone
 * the way the page says) until an agent's claim shows on that same page. At a phone's width;
 * the home page at a laptop's too. Screenshots land in e2e/artifacts/.
 */
let app: AppProcess;
let dataDir: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  dataDir = tempDataDir();
  [app, browser] = await Promise.all([startApp({ RETASC_DATA_DIR: dataDir }, { timeoutMs: 150_000 }), launchBrowser()]);
  context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: app.url });
  page = await context.newPage();
});
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  removeTemps();
});

/** Sideways overflow of the page, and any code block whose text is cut off (wider than its box). */
async function layoutProblems(p: Page): Promise<string[]> {
  return p.evaluate(() => {
    const found: string[] = [];
    const doc = document.documentElement;
    if (doc.scrollWidth > window.innerWidth) found.push(`page is ${doc.scrollWidth} px wide in ${window.innerWidth}`);
    for (const el of document.querySelectorAll("pre, code")) {
      if (el.scrollWidth > el.clientWidth + 1) found.push(`${el.tagName.toLowerCase()} cut off: ${el.textContent?.slice(0, 60)}`);
      if (el.getBoundingClientRect().right > window.innerWidth + 1) found.push(`${el.tagName.toLowerCase()} runs off screen: ${el.textContent?.slice(0, 60)}`);
    }
    return found;
  });
}

test("from npm start to an agent's claim on the Fleet page, without the README", async () => {
  const { errors } = watchConsole(page);
  const localUrl = `http://localhost:${app.port}`;

  // The banner points at the browser, never at a command that refuses while the server runs.
  expect(app.output()).toContain(`${localUrl}/auth/sign-up`);
  expect(app.output()).not.toContain("bootstrap");

  // The home page: a way to sign up, no bootstrap advice, nothing cut off at either width.
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 844 });
    await page.goto(app.url);
    expect(await page.locator("main").innerText()).not.toMatch(/bootstrap/i);
    expect(await layoutProblems(page)).toEqual([]);
    await screenshot(page, `newcomer-home-${width}`);
  }
  await page.getByRole("navigation", { name: "Account" }).getByRole("link", { name: "Create your account" }).click();

  // Sign-up creates the person and leads straight on to the org.
  await page.waitForURL(/\/auth\/sign-up/);
  expect(await layoutProblems(page)).toEqual([]);
  await screenshot(page, "newcomer-sign-up");
  const email = `nora-${Date.now()}@example.com`;
  await page.getByLabel("Name").fill("Nora");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("correct horse battery staple");
  await page.getByRole("button", { name: "Create account" }).click();
  await page.waitForURL(/\/dash\/orgs\/new$/);
  expect(await page.locator("header").innerText(), await page.locator("body").innerText()).toContain(email);
  expect(await layoutProblems(page)).toEqual([]);
  await screenshot(page, "newcomer-new-org");

  // A bad prefix is refused with the reason, and the org is not created half-way.
  await page.getByLabel("Org name").fill("Acme");
  await page.getByLabel("Project name").fill("Web");
  await page.getByLabel("Issue prefix").fill("1");
  await page.getByRole("button", { name: "Create org" }).click();
  await page.getByRole("alert").waitFor();
  expect(await page.getByRole("alert").innerText()).toMatch(/prefix/i);
  expect(page.url()).toMatch(/\/dash\/orgs\/new$/);
  expect(await page.getByLabel("Org name").inputValue()).toBe("Acme");

  // The org and its first project in one step, then the empty Fleet page with the next step.
  await page.getByLabel("Issue prefix").fill("WEB");
  await page.getByRole("button", { name: "Create org" }).click();
  await page.waitForURL(/\/dash$/);
  // Read the page once it has rendered (the URL changes before the Fleet page is in).
  await page.getByRole("heading", { name: "Fleet", level: 1 }).waitFor();
  expect(await page.locator("#org-switcher option").allTextContents()).toEqual(["Acme (owner)"]);
  const next = page.getByRole("region", { name: "Next: connect an agent" });
  await next.waitFor();
  expect(await next.innerText()).not.toContain("create a project");
  expect(await layoutProblems(page)).toEqual([]);
  await screenshot(page, "newcomer-empty-fleet");

  // Every command the card prints works as printed. The install line, from this server, by an
  // npm that reaches no registry (the tarball carries its dependencies).
  const cardText = await next.innerText();
  const install = /\(([^()]*npm install -g[^()]*)\)/.exec(cardText)?.[1];
  expect(install).toBe(`npm install -g ${app.url}/cli/latest`);
  const prefix = tempDir("retasc-prefix-");
  const installed = spawnSync("sh", ["-c", install!], {
    cwd: prefix,
    encoding: "utf8",
    env: {
      ...process.env,
      npm_config_prefix: prefix,
      npm_config_cache: path.join(prefix, ".npm-cache"),
      npm_config_registry: "http://127.0.0.1:9/",
      npm_config_audit: "false",
      npm_config_fund: "false",
    },
  });
  expect(installed.status, installed.stderr).toBe(0);
  const bin = path.join(prefix, "bin", "retasc");
  const machine = { HOME: tempDir("retasc-home-"), PATH: `${path.dirname(bin)}${path.delimiter}${process.env.PATH}` };

  const commands = (await next.locator("pre").first().innerText()).trim().split("\n");
  expect(commands).toEqual([`retasc login --url ${app.url}`, "retasc bind"]);
  await next.getByRole("button", { name: "Copy Commands" }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(commands.join("\n"));
  // The MCP URL the card gives is the server's /mcp, which asks a stranger to sign in (OAuth).
  const mcpUrl = (await next.locator("pre").nth(1).innerText()).trim();
  expect(mcpUrl).toBe(`${app.url}/mcp`);
  expect((await fetch(mcpUrl, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{}" })).status).toBe(401);

  const nora: Person = { name: "Nora", email, page: await context.newPage(), retascDir: machine.HOME };
  const login = await loginThroughDevice(nora, { url: app.url } as E2eApp, { bin, env: machine });
  expect(login.code, login.stderr).toBe(0);
  expect(login.stdout).toContain(`Signed in as Nora <${email}>`);
  const repo = gitRepo();
  const bind = await retasc(nora, commands[1]!.split(" ").slice(1), { cwd: repo, bin, env: machine });
  expect(bind.code, bind.stderr).toBe(0);
  expect(JSON.parse(fs.readFileSync(path.join(repo, ".retasc.json"), "utf8"))).toMatchObject({ url: app.url, prefix: "WEB" });

  // The agent the folder wires pulls work, and its claim shows on the Fleet page as the card said.
  const agent = await connectAsFolder(nora, repo, machine);
  try {
    expect(await tool(agent, "save_issue", { title: "Serve a health page", work: true, changeType: "feat", noDependency: "first issue" })).toMatchObject({ identifier: "WEB-1" });
    expect(await tool(agent, "next_issue")).toMatchObject({ identifier: "WEB-1" });
  } finally {
    await agent.close();
  }
  const claims = page.locator("section", { has: page.locator("#claims-heading") });
  await eventually(async () => (await claims.innerText()).includes("WEB-1"), 15_000).toBe(true);
  expect(await layoutProblems(page)).toEqual([]);
  await screenshot(page, "newcomer-first-claim");
  expect(errors).toEqual([]);
});
