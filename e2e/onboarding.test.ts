import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { connectAsFolder as connectFolder, gitRepo, launchBrowser, loginThroughDevice, mcp, retasc, signUp, startE2eApp, tool, removeTemps, tempDir, type E2eApp, type Person } from "./harness.ts";

/**
 * A person's whole path to an agent pulling work: sign up in the browser, `retasc login`
 * approved on /device, `retasc bind` in a repo, the folder's own wiring used to call
 * next_issue over /mcp; then `retasc claim` opens a worktree and `retasc done` finishes it and
 * removes the worktree (kept when it holds uncommitted work).
 */
let app: E2eApp;
let browser: Browser;
let ada: Person;
let repo: string;
const clients: Client[] = [];

beforeAll(async () => {
  [app, browser] = await Promise.all([startE2eApp(), launchBrowser()]);
  ada = await signUp(browser, app, "Ada");
  repo = gitRepo();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await browser?.close();
  await app?.close();
  removeTemps();
});

/** Connects the way Claude Code would: the command (or URL and headers helper) of the folder's .mcp.json. */
async function connectAsFolder(folder: string): Promise<Client> {
  const client = await connectFolder(ada, folder);
  clients.push(client);
  return client;
}

test("device login approved on /device, bind in a repo, next_issue with the folder's key", async () => {
  const login = await loginThroughDevice(ada, app);
  expect(login.code, login.stderr).toBe(0);
  expect(login.stdout).toContain(`Signed in as Ada <${ada.email}>`);

  const bind = await retasc(ada, ["bind", "--org-name", "Acme", "--project", "Web", "--prefix", "WEB", "--json"], { cwd: repo });
  expect(bind.code, bind.stderr).toBe(0);
  const bound = JSON.parse(bind.stdout);
  expect(bound).toMatchObject({ orgName: "Acme", prefix: "WEB", mcpUrl: `${app.url}/mcp` });
  expect(Object.keys(bound.clients).sort()).toEqual(["cline", "codex", "cursor", "gemini", "opencode"]);
  expect(bind.stdout).not.toMatch(/rtsc_[A-Za-z0-9_-]{20,}/);

  // The marker is safe to commit; the keystore is private.
  const marker = fs.readFileSync(path.join(repo, ".mcp.json"), "utf8");
  expect(marker).not.toContain("rtsc_");
  expect(fs.statSync(path.join(ada.retascDir, "bindings.json")).mode & 0o777).toBe(0o600);
  expect(fs.statSync(path.join(ada.retascDir, "config.json")).mode & 0o777).toBe(0o600);

  const agent = await connectAsFolder(repo);
  const who = await tool(agent, "whoami");
  expect(who).toMatchObject({ kind: "agent", org: { name: "Acme" }, project: { prefix: "WEB" }, human: { email: ada.email, role: "owner" } });
  const filed = await tool(agent, "save_issue", { title: "Serve a health page", work: true, changeType: "feat", noDependency: "first issue", priority: 2 });
  expect(filed.identifier).toBe("WEB-1");
  const claimed = await tool(agent, "next_issue");
  expect(claimed).toMatchObject({ identifier: "WEB-1", branch: expect.stringMatching(/^web-1\//) });
  expect(claimed.claimToken).toEqual(expect.any(String));

  // Binding again to the same org and project is an idempotent success.
  const again = await retasc(ada, ["bind", "--org-name", "Acme", "--project", "WEB", "--json"], { cwd: repo });
  expect(again.code, again.stderr).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ unchanged: true, workspaceId: bound.workspaceId });

  const whoami = await retasc(ada, ["whoami", "--json"], { cwd: repo });
  expect(whoami.code, whoami.stderr).toBe(0);
  expect(JSON.parse(whoami.stdout)).toMatchObject({
    binding: { org: { name: "Acme" }, project: { prefix: "WEB" } },
    session: { user: { email: ada.email }, orgs: [{ name: "Acme", role: "owner" }] },
  });
  const doctor = await retasc(ada, ["doctor", "--json"], { cwd: repo });
  expect(doctor.code, doctor.stderr).toBe(0);
  expect(JSON.parse(doctor.stdout).healthy).toBe(true);
});

test("retasc claim creates the worktree on the server's branch; retasc done finishes with that claim's token", async () => {
  const agent = await connectAsFolder(repo);
  const filed = await tool(agent, "save_issue", { title: "Add the users table", work: true, changeType: "feat", noDependency: "schema work", priority: 1 });

  const claim = await retasc(ada, ["claim", filed.identifier.split("-")[1], "--json"], { cwd: repo });
  expect(claim.code, claim.stderr).toBe(0);
  const claimed = JSON.parse(claim.stdout);
  expect(claimed.identifier).toBe(filed.identifier);
  expect(claimed).not.toHaveProperty("claimToken");
  const branch = spawnSync("git", ["branch", "--show-current"], { cwd: claimed.worktree, encoding: "utf8" }).stdout.trim();
  expect(branch).toBe(claimed.branch);
  expect(path.dirname(claimed.worktree)).toBe(path.dirname(repo));
  // The agent started in the worktree is wired too.
  expect(fs.existsSync(path.join(claimed.worktree, ".mcp.json"))).toBe(true);

  const held = await tool(agent, "get_issue", { identifier: filed.identifier });
  expect(held.status).toBe("doing");
  expect(held.lease).toMatchObject({ runtime: "claude-code" });

  // The agent's work, committed: the worktree is clean apart from the .mcp.json claim copied in.
  fs.writeFileSync(path.join(claimed.worktree, "users.sql"), "create table users ();\n");
  const git = (cwd: string, ...args: string[]) => spawnSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=T", ...args], { cwd, encoding: "utf8" });
  git(claimed.worktree, "add", "users.sql");
  expect(git(claimed.worktree, "commit", "-q", "-m", "users table").status).toBe(0);

  const done = await retasc(ada, ["done"], { cwd: claimed.worktree });
  expect(done.code, done.stderr).toBe(0);
  expect(done.stdout).toContain(`${filed.identifier} is done.`);
  expect(done.stdout).toContain(`Removed its worktree ${claimed.worktree}; the branch ${claimed.branch} stays.`);
  expect(done.stdout).toContain(`Your shell was in it: cd ${JSON.stringify(repo)}`);
  expect(await tool(agent, "get_issue", { identifier: filed.identifier })).toMatchObject({ status: "done" });
  expect(fs.existsSync(claimed.worktree)).toBe(false);
  expect(git(repo, "worktree", "list", "--porcelain").stdout).not.toContain(claimed.worktree);
  expect(git(repo, "log", "-1", "--format=%s", claimed.branch).stdout.trim()).toBe("users table");

  // Run again after it succeeded: the finished state, not a refusal.
  const twice = await retasc(ada, ["done", "--id", filed.identifier], { cwd: repo });
  expect(twice.code, twice.stderr).toBe(0);
  expect(twice.stdout).toContain(`${filed.identifier} is already done.`);
});

test("retasc done refuses uncommitted or commit-less work unless --force; forced, it keeps a worktree with uncommitted changes (or --keep-worktree), says so, and finishes", async () => {
  const agent = await connectAsFolder(repo);
  const dirty = await tool(agent, "save_issue", { title: "Add the orders table", work: true, changeType: "feat", noDependency: "schema work", priority: 1 });
  const claim = await retasc(ada, ["claim", dirty.identifier, "--json"], { cwd: repo });
  expect(claim.code, claim.stderr).toBe(0);
  const { worktree } = JSON.parse(claim.stdout) as { worktree: string };
  fs.writeFileSync(path.join(worktree, "orders.sql"), "create table orders ();\n");

  const refused = await retasc(ada, ["done", "--id", dirty.identifier], { cwd: repo });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(`✗ UNFINISHED_WORK: ${dirty.identifier} is not finished in ${worktree}: it has uncommitted changes (1 path); its branch`);
  expect(await tool(agent, "get_issue", { identifier: dirty.identifier })).toMatchObject({ status: "doing" });

  const done = await retasc(ada, ["done", "--id", dirty.identifier, "--force", "--json"], { cwd: repo });
  expect(done.code, done.stderr).toBe(0);
  expect(JSON.parse(done.stdout)).toMatchObject({
    identifier: dirty.identifier,
    status: "done",
    worktree,
    worktreeRemoved: false,
    worktreeKept: "it has uncommitted changes (1 path)",
  });
  expect(done.stderr).toContain(`Kept its worktree ${worktree}: it has uncommitted changes (1 path).`);
  expect(fs.readFileSync(path.join(worktree, "orders.sql"), "utf8")).toBe("create table orders ();\n");
  expect(await tool(agent, "get_issue", { identifier: dirty.identifier })).toMatchObject({ status: "done" });

  // A clean one in --json mode says it was removed.
  const clean = await tool(agent, "save_issue", { title: "Add the items table", work: true, changeType: "feat", noDependency: "schema work", priority: 1 });
  const claimedClean = JSON.parse((await retasc(ada, ["claim", clean.identifier, "--json"], { cwd: repo })).stdout) as { worktree: string };
  const cleanDone = await retasc(ada, ["done", "--id", clean.identifier, "--force", "--json"], { cwd: repo });
  expect(cleanDone.code, cleanDone.stderr).toBe(0);
  expect(JSON.parse(cleanDone.stdout)).toMatchObject({ status: "done", worktree: claimedClean.worktree, worktreeRemoved: true });
  expect(JSON.parse(cleanDone.stdout)).not.toHaveProperty("worktreeKept");
  expect(fs.existsSync(claimedClean.worktree)).toBe(false);

  // --keep-worktree leaves even a clean one.
  const kept = await tool(agent, "save_issue", { title: "Add the carts table", work: true, changeType: "feat", noDependency: "schema work", priority: 1 });
  const claimedKept = JSON.parse((await retasc(ada, ["claim", kept.identifier, "--json"], { cwd: repo })).stdout) as { worktree: string };
  const keptDone = await retasc(ada, ["done", "--id", kept.identifier, "--keep-worktree", "--force", "--json"], { cwd: repo });
  expect(keptDone.code, keptDone.stderr).toBe(0);
  expect(JSON.parse(keptDone.stdout)).toMatchObject({ worktree: claimedKept.worktree, worktreeRemoved: false, worktreeKept: "--keep-worktree" });
  expect(fs.existsSync(path.join(claimedKept.worktree, ".git"))).toBe(true);
});

test("retasc next takes the top of the queue into a worktree; an empty queue is said plainly", async () => {
  const agent = await connectAsFolder(repo);
  await tool(agent, "save_issue", { title: "Write the README", work: true, changeType: "feat", noDependency: "docs", priority: 4 });
  const next = await retasc(ada, ["next", "--print-path"], { cwd: repo });
  expect(next.code, next.stderr).toBe(0);
  const worktree = next.stdout.trim();
  expect(fs.existsSync(path.join(worktree, ".git"))).toBe(true);
  const empty = await retasc(ada, ["next", "--json"], { cwd: repo });
  expect(empty.code, empty.stderr).toBe(0);
  expect(JSON.parse(empty.stdout)).toMatchObject({ claimed: false });
});

test("a setup code from the Dash binds a headless folder once, with no login", async () => {
  await ada.page.goto(`${app.url}/dash/settings/keys`);
  await ada.page.getByRole("button", { name: "Get a setup code" }).click();
  const prompt = await ada.page.getByTestId("setup-code").locator("pre").textContent();
  const code = /rtscsetup_[A-Za-z0-9_-]+/.exec(prompt ?? "")?.[0];
  expect(code).toBeTruthy();

  const headless = { retascDir: tempDir("retasc-headless-") };
  const folder = gitRepo();
  const bind = await retasc(headless, ["bind", "--setup", code!, "--url", app.url, "--json"], { cwd: folder });
  expect(bind.code, bind.stderr).toBe(0);
  expect(JSON.parse(bind.stdout)).toMatchObject({ orgName: "Acme", prefix: "WEB" });
  const who = await retasc(headless, ["whoami", "--json"], { cwd: folder });
  expect(JSON.parse(who.stdout)).toMatchObject({ binding: { human: { email: ada.email } }, session: null });

  const reused = await retasc(headless, ["bind", "--setup", code!, "--url", app.url, "--yes"], { cwd: gitRepo() });
  expect(reused.code).toBe(1);
  expect(reused.stderr).toContain("✗ CONFLICT: this setup code was already used");
});

test("the Dash shows a new key once, then only its prefix", async () => {
  const page = ada.page;
  await page.goto(`${app.url}/dash/settings/keys`);
  await page.getByRole("button", { name: "Mint key" }).click();
  const key = (await page.getByTestId("new-key").locator("pre").textContent())!.trim();
  expect(key).toMatch(/^rtsc_/);
  await page.goto(`${app.url}/dash/settings/keys`);
  expect(await page.content()).not.toContain(key);
  await expect(page.locator(`tr[data-key="${key.slice(0, 12)}"]`).count()).resolves.toBe(1);
  // The key works: an agent can connect with it.
  const agent = await mcp(`${app.url}/mcp`, { authorization: `Bearer ${key}` });
  clients.push(agent);
  expect((await tool(agent, "whoami")).human.email).toBe(ada.email);
});

test("login --google says at once when Google is not set up; logout ends the session on the server", async () => {
  const google = await retasc(ada, ["login", "--google", "--url", app.url]);
  expect(google.code).toBe(1);
  expect(google.stderr).toContain(`✗ UNAVAILABLE: ${app.url} has no Google sign-in configured`);
  expect(google.stderr).toContain("email and password");

  const token = JSON.parse(fs.readFileSync(path.join(ada.retascDir, "config.json"), "utf8")).sessions[app.url].token;
  const before = await fetch(`${app.url}/api/cli/whoami`, { headers: { authorization: `Bearer ${token}` } });
  expect(before.status).toBe(200);
  const logout = await retasc(ada, ["logout"]);
  expect(logout.code, logout.stderr).toBe(0);
  const after = await fetch(`${app.url}/api/cli/whoami`, { headers: { authorization: `Bearer ${token}` } });
  expect(after.status).toBe(401);
  expect(((await after.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
  // The folder's key is untouched: the binding still works without a session.
  const whoami = await retasc(ada, ["whoami", "--json"], { cwd: repo });
  expect(JSON.parse(whoami.stdout)).toMatchObject({ binding: { org: { name: "Acme" } }, session: null });
});
