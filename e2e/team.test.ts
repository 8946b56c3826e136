import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { connectAsFolder, gitRepo, launchBrowser, loginThroughDevice, retasc, signUp, startE2eApp, tool, removeTemps, type E2eApp, type Person } from "./harness.ts";

/**
 * A team forms: the owner invites, a teammate joins with `retasc join` and lands as a
 * member with their own key and lane; spent, revoked and expired codes are refused with
 * their reason; members and admins are refused what their role does not allow.
 */
let app: E2eApp;
let browser: Browser;
let alice: Person;
let bob: Person;
let carol: Person;
let aliceRepo: string;
let bobRepo: string;
const clients: Client[] = [];

beforeAll(async () => {
  [app, browser] = await Promise.all([startE2eApp(), launchBrowser()]);
  [alice, bob, carol] = await Promise.all([signUp(browser, app, "Alice"), signUp(browser, app, "Bob"), signUp(browser, app, "Carol")]);
  for (const person of [alice, bob, carol]) {
    const login = await loginThroughDevice(person, app);
    expect(login.code, login.stderr).toBe(0);
  }
  aliceRepo = gitRepo();
  bobRepo = gitRepo();
  const init = await retasc(alice, ["init", "--org", "Northwind", "--project", "Engine", "--prefix", "ENG", "--json"], { cwd: aliceRepo });
  expect(init.code, init.stderr).toBe(0);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await browser?.close();
  await app?.close();
  removeTemps();
});

async function invite(): Promise<{ code: string; inviteId: string }> {
  const result = await retasc(alice, ["members", "invite", "--json"], { cwd: aliceRepo });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}

/** The MCP client of a bound folder, through its .mcp.json like Claude Code. */
async function folderAgent(person: Person, folder: string): Promise<Client> {
  const client = await connectAsFolder(person, folder);
  clients.push(client);
  return client;
}

test("the owner invites; the teammate joins with retasc join and lands as a member with their own key and lane", async () => {
  const { code } = await invite();
  expect(code).toMatch(/^rtscinv_/);
  const join = await retasc(bob, ["join", code, "--json"], { cwd: bobRepo });
  expect(join.code, join.stderr).toBe(0);
  expect(join.stderr).toContain('Joined org "Northwind"');
  const bound = JSON.parse(join.stdout);
  expect(bound).toMatchObject({ joined: { orgName: "Northwind", role: "member" }, prefix: "ENG" });

  const bobAgent = await folderAgent(bob, bobRepo);
  expect(await tool(bobAgent, "whoami")).toMatchObject({ human: { email: bob.email, role: "member" }, project: { prefix: "ENG" } });

  // Bob's lane: an issue assigned to him is his agent's, not Alice's.
  const aliceAgent = await folderAgent(alice, aliceRepo);
  const forBob = await tool(aliceAgent, "save_issue", { title: "Tune the parser", work: true, changeType: "feat", noDependency: "solo", assignee: bob.email, priority: 2 });
  const aliceNext = await tool(aliceAgent, "next_issue");
  expect(aliceNext.claimToken).toBeUndefined();
  expect(aliceNext.otherLanes).toBe(1);
  const bobNext = await tool(bobAgent, "next_issue");
  expect(bobNext.identifier).toBe(forBob.identifier);

  const members = await retasc(alice, ["members", "list", "--json"], { cwd: aliceRepo });
  const listed = JSON.parse(members.stdout);
  expect(listed.members.find((m: any) => m.kind === "human" && m.email === bob.email)).toMatchObject({ role: "member", status: "active" });
  expect(listed.invites[0]).toMatchObject({ state: "accepted", acceptedBy: bob.email, expiresAt: null });
});

test("a reused invite code is refused, saying it was already used", async () => {
  const { code } = await invite();
  const first = await retasc(bob, ["join", code, "--no-bind"], { cwd: bobRepo });
  // Bob is already in: the code stays unspent, and Carol can use it once.
  expect(first.code).toBe(1);
  expect(first.stderr).toContain("✗ CONFLICT: you are already a member of Northwind");
  const carolJoins = await retasc(carol, ["join", code, "--no-bind", "--json"]);
  expect(carolJoins.code, carolJoins.stderr).toBe(0);
  const reused = await retasc(alice, ["join", `${app.url}/join/${code}`, "--no-bind"]);
  expect(reused.code).toBe(1);
  expect(reused.stderr).toMatch(/^✗ (CONFLICT: you are already a member|CONFLICT: this invite was already used)/);
  const dave = await signUp(browser, app, "Dave");
  expect((await loginThroughDevice(dave, app)).code).toBe(0);
  const daveTries = await retasc(dave, ["join", code, "--no-bind"]);
  expect(daveTries.code).toBe(1);
  expect(daveTries.stderr).toContain("✗ CONFLICT: this invite was already used; invite codes work once");
  expect(daveTries.stderr).toContain("Ask an owner or admin of the org for a new invite.");
});

test("a revoked invite code is refused, saying it was revoked", async () => {
  const { code, inviteId } = await invite();
  const revoke = await retasc(alice, ["members", "revoke", "--invite-id", inviteId], { cwd: aliceRepo });
  expect(revoke.code, revoke.stderr).toBe(0);
  const outsider = await signUp(browser, app, "Erin");
  expect((await loginThroughDevice(outsider, app)).code).toBe(0);
  const tried = await retasc(outsider, ["join", code, "--no-bind"]);
  expect(tried.code).toBe(1);
  expect(tried.stderr).toContain("✗ FORBIDDEN: this invite was revoked");
  // The web join page says the same.
  await outsider.page.goto(`${app.url}/join/${code}`);
  await expect(outsider.page.getByRole("alert").textContent()).resolves.toContain("This invite is revoked");
});

test("an expired invite code is refused, saying when it expired", async () => {
  const { code } = await invite();
  await app.expireInvites();
  const outsider = await signUp(browser, app, "Frank");
  expect((await loginThroughDevice(outsider, app)).code).toBe(0);
  const tried = await retasc(outsider, ["join", code, "--no-bind"]);
  expect(tried.code).toBe(1);
  expect(tried.stderr).toMatch(/✗ FORBIDDEN: this invite expired on \d{4}-\d{2}-\d{2}/);
});

test("role checks: a member cannot revoke another's key, invite or suspend; an admin cannot suspend an owner", async () => {
  const aliceKeys = JSON.parse((await retasc(alice, ["key", "list", "--json"], { cwd: aliceRepo })).stdout).keys;
  const aliceKey = aliceKeys.find((k: any) => k.userEmail === alice.email);

  const revoke = await retasc(bob, ["key", "revoke", "--key-id", aliceKey.keyId], { cwd: bobRepo });
  expect(revoke.code).toBe(1);
  expect(revoke.stderr).toContain("✗ FORBIDDEN: revoking another person's key needs the owner or admin role; you are a member");
  const stillWorks = await folderAgent(alice, aliceRepo);
  expect((await tool(stillWorks, "whoami")).human.email).toBe(alice.email);

  const invite = await retasc(bob, ["members", "invite"], { cwd: bobRepo });
  expect(invite.code).toBe(1);
  expect(invite.stderr).toContain("✗ FORBIDDEN: inviting people needs the owner or admin role; you are a member");

  const bobAgent = await folderAgent(bob, bobRepo);
  const { members } = await tool(bobAgent, "list_members");
  const memberId = (email: string) => members.find((m: any) => m.kind === "human" && m.email === email).memberId;
  const suspend = await tool(bobAgent, "suspend_member", { memberId: memberId(carol.email) });
  expect(suspend.error).toMatchObject({ code: "FORBIDDEN", message: "suspending a member needs the owner or admin role; you are a member" });

  // The owner makes Bob an admin in the Dash; as admin he still cannot suspend the owner.
  await alice.page.goto(`${app.url}/dash/settings/members`);
  await alice.page.locator(`tr[data-member="${bob.email}"]`).getByRole("button", { name: "Make admin" }).click();
  await alice.page.getByText("Role changed to admin.").waitFor();
  const onOwner = await tool(bobAgent, "suspend_member", { memberId: memberId(alice.email) });
  expect(onOwner.error).toMatchObject({ code: "FORBIDDEN", message: "An admin cannot suspend an owner" });
  // …but he can suspend a member, whose agents are retired at once.
  const suspended = await tool(bobAgent, "suspend_member", { memberId: memberId(carol.email) });
  expect(suspended).toMatchObject({ status: "suspended" });
  // As an admin, the Dash now offers him the invite controls.
  await bob.page.goto(`${app.url}/dash/settings/members`);
  await expect(bob.page.getByRole("button", { name: "New invite" }).count()).resolves.toBe(1);
});
