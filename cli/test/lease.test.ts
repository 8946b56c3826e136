import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { git, gitRepo, login, removeTemps, retasc, signUp, startServer, type Person, type Server } from "./testing.ts";

/**
 * A CLI user manages the lease `retasc claim` gave them, over /mcp with the folder's key:
 * heartbeat, checkpoint, check-claim, release, issue show / list, done (refusing unfinished
 * work unless --force, --dry-run changing nothing), tidy and unbind.
 */
let server: Server;
let ada: Person;
let repo: string;
let agent: Client;
let key: string;

beforeAll(async () => {
  server = await startServer();
  ada = await signUp(server, "Ada");
  expect((await login(server, ada)).code).toBe(0);
  repo = gitRepo();
  const bind = await retasc(ada, ["bind", "--org-name", "Acme", "--project", "Web", "--prefix", "WEB"], { cwd: repo });
  expect(bind.code, bind.stderr).toBe(0);
  key = (await retasc(ada, ["mcp", "key"], { cwd: repo })).stdout.trim();
  agent = new Client({ name: "filer", version: "1.0.0" });
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
});
afterAll(async () => {
  await agent?.close();
  await server?.close();
  removeTemps();
});

async function tool(name: string, args: Record<string, unknown> = {}): Promise<any> {
  return (await agent.callTool({ name, arguments: args })).structuredContent;
}

async function file(title: string): Promise<string> {
  return (await tool("save_issue", { title, work: true, changeType: "feat", noDependency: "test work", priority: 2 })).identifier;
}

const json = (result: { stdout: string }) => JSON.parse(result.stdout);

describe("lease commands", () => {
  it("heartbeat, checkpoint and check-claim act on the claim of the branch you are on; issue show and list read it", async () => {
    const identifier = await file("Serve a health page");
    const claim = await retasc(ada, ["claim", identifier, "--json"], { cwd: repo });
    expect(claim.code, claim.stderr).toBe(0);
    const claimed = json(claim);

    const beat = await retasc(ada, ["heartbeat", "--json"], { cwd: claimed.worktree });
    expect(beat.code, beat.stderr).toBe(0);
    expect(Date.parse(json(beat).expiresAt)).toBeGreaterThan(Date.parse(claimed.expiresAt));
    const text = await retasc(ada, ["heartbeat"], { cwd: claimed.worktree });
    expect(text.stdout).toMatch(new RegExp(`^✓ ${identifier}: lease renewed until `));

    const saved = await retasc(ada, ["checkpoint", "--done", "route added", "--next", "write tests", "--gotchas", "port 3000 is taken"], { cwd: claimed.worktree });
    expect(saved.code, saved.stderr).toBe(0);
    expect((await tool("get_issue", { identifier })).checkpoint).toMatchObject({ done: "route added", next: "write tests", gotchas: "port 3000 is taken" });
    expect((await retasc(ada, ["checkpoint"], { cwd: claimed.worktree })).stderr).toContain("✗ INVALID_INPUT: a checkpoint needs at least one note");

    const checked = await retasc(ada, ["check-claim", identifier.split("-")[1]!, "--json"], { cwd: repo });
    expect(json(checked)).toMatchObject({ identifier, youHold: true, held: true, status: "doing", tokenHere: true });

    const shown = await retasc(ada, ["issue", "show", identifier], { cwd: repo });
    expect(shown.stdout).toContain(`${identifier}  Serve a health page`);
    expect(shown.stdout).toContain("next: write tests");
    const listed = await retasc(ada, ["issue", "list", "--status", "doing", "--json"], { cwd: repo });
    expect(json(listed).issues.map((i: { identifier: string }) => i.identifier)).toContain(identifier);
    const none = await retasc(ada, ["issue", "list", "--status", "canceled"], { cwd: repo });
    expect(none.stdout).toBe("No issues match.\n");
  });

  it("done refuses a branch with no commits or uncommitted changes unless --force; --dry-run changes nothing", async () => {
    const identifier = await file("Add the users table");
    const claimed = json(await retasc(ada, ["claim", identifier, "--json"], { cwd: repo }));

    const plan = await retasc(ada, ["done", "--dry-run", "--json"], { cwd: claimed.worktree });
    expect(json(plan)).toMatchObject({ identifier, dryRun: true, wouldFinish: false, refusedBecause: [`its branch ${claimed.branch} has no commits of its own`] });
    const refused = await retasc(ada, ["done"], { cwd: claimed.worktree });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`✗ UNFINISHED_WORK: ${identifier} is not finished in ${claimed.worktree}: its branch ${claimed.branch} has no commits of its own`);
    expect(refused.stderr).toContain(`retasc done --id ${identifier} --force`);

    fs.writeFileSync(path.join(claimed.worktree, "users.sql"), "create table users ();\n");
    const dirty = await retasc(ada, ["done"], { cwd: claimed.worktree });
    expect(dirty.stderr).toContain("it has uncommitted changes (1 path)");
    git(claimed.worktree, "add", "users.sql");
    expect(git(claimed.worktree, "commit", "-q", "-m", "users table").status).toBe(0);

    const ready = await retasc(ada, ["done", "--dry-run"], { cwd: claimed.worktree });
    expect(ready.stdout).toContain(`Would finish ${identifier} (status done)`);
    expect(ready.stdout).toContain(`Would remove its worktree ${claimed.worktree}`);
    expect(fs.existsSync(claimed.worktree)).toBe(true);
    expect(await tool("get_issue", { identifier })).toMatchObject({ status: "doing" });

    const head = git(claimed.worktree, "rev-parse", "HEAD").stdout.trim();
    const done = await retasc(ada, ["done", "--json"], { cwd: claimed.worktree });
    expect(done.code, done.stderr).toBe(0);
    // The worktree's HEAD and branch go with the finish as its evidence (decision 045).
    expect(json(done)).toMatchObject({ identifier, status: "done", worktreeRemoved: true, evidence: { commit: head, branch: claimed.branch, pr: null } });
  });

  it("release gives the issue back with a note; the token is gone, and hints name commands and this project's prefix", async () => {
    const identifier = await file("Write the README");
    expect((await retasc(ada, ["claim", identifier, "--no-worktree"], { cwd: repo })).code).toBe(0);
    const released = await retasc(ada, ["release", identifier, "--note", "needs a decision on tone", "--json"], { cwd: repo });
    expect(released.code, released.stderr).toBe(0);
    expect(json(released)).toMatchObject({ identifier, released: true, held: false });
    expect((await tool("get_issue", { identifier })).checkpoint).toMatchObject({ note: "needs a decision on tone" });
    expect(json(await retasc(ada, ["check-claim", identifier, "--json"], { cwd: repo }))).toMatchObject({ held: false, youHold: false, tokenHere: false });

    const again = await retasc(ada, ["heartbeat", identifier], { cwd: repo });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`✗ STALE_CLAIM: no claim of ${identifier} was made with this folder's key on this machine`);
    expect(again.stderr).toContain(`\`retasc claim ${identifier}\``);

    // A server hint written for agents, read by a person at a terminal.
    const missing = await retasc(ada, ["issue", "show", "999"], { cwd: repo });
    expect(missing.stderr).toContain("✗ NOT_FOUND");
    expect(missing.stderr).toContain("(like WEB-42); `retasc issue list` shows what exists.");
    expect(missing.stderr).not.toMatch(/RTSC|list_issues/);
    expect((await retasc(ada, ["claim", "x-y"], { cwd: repo })).stderr).toContain("Pass one like WEB-42, web-42 or 42.");
  });

  it("issue list --author and --sla filter as list_issues does; an --sla that is no deadline state is refused before any call", async () => {
    const due = (await tool("save_issue", { title: "Renew the TLS certificate", work: true, changeType: "chore", noDependency: "test work", dueAt: new Date(Date.now() + 86_400_000).toISOString() })).identifier;
    const onTime = await retasc(ada, ["issue", "list", "--sla", "ok", "--author", "me", "--json"], { cwd: repo });
    expect(onTime.code, onTime.stderr).toBe(0);
    expect(json(onTime).issues.map((i: { identifier: string }) => i.identifier)).toEqual([due]);
    const none = await retasc(ada, ["issue", "list", "--sla", "none", "--json"], { cwd: repo });
    expect(json(none).issues.map((i: { identifier: string }) => i.identifier)).not.toContain(due);
    const stranger = await retasc(ada, ["issue", "list", "--author", "nobody@example.com"], { cwd: repo });
    expect(stranger.code).toBe(1);
    expect(stranger.stderr).toContain("✗ NOT_FOUND: member nobody@example.com");
    const late = await retasc(ada, ["issue", "list", "--sla", "late"], { cwd: repo });
    expect(late.code).toBe(1);
    expect(late.stderr).toContain("✗ INVALID_INPUT: --sla late is not a deadline state");
  });

  it("tidy removes the clean worktrees of finished issues, keeps the rest, and --prune their merged branches; unbind forgets and revokes the key", async () => {
    const finished = await file("Add the orders table");
    const open = await file("Add the carts table");
    const a = json(await retasc(ada, ["claim", finished, "--json"], { cwd: repo }));
    const b = json(await retasc(ada, ["claim", open, "--json"], { cwd: repo }));
    expect((await retasc(ada, ["done", "--id", finished, "--force", "--keep-worktree"], { cwd: repo })).code).toBe(0);

    const plan = await retasc(ada, ["tidy", "--dry-run", "--json"], { cwd: repo });
    expect(json(plan).worktrees).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ identifier: finished, status: "done", removed: false, reason: "--dry-run: would remove it if clean" }),
        expect.objectContaining({ identifier: open, status: "doing", removed: false, reason: "the issue is not finished" }),
      ]),
    );
    expect(fs.existsSync(a.worktree)).toBe(true);
    const tidy = await retasc(ada, ["tidy"], { cwd: repo });
    expect(tidy.code, tidy.stderr).toBe(0);
    expect(tidy.stdout).toContain(`✓ Removed ${a.worktree} (${finished} is done; its branch stays).`);
    expect(fs.existsSync(a.worktree)).toBe(false);
    expect(fs.existsSync(b.worktree)).toBe(true);

    // --prune: a finished issue's branch goes once its base has merged it, worktree or not; one with
    // a commit the base lacks stays, as does an unfinished issue's.
    const unmerged = await file("Add the invoices table");
    const c = json(await retasc(ada, ["claim", unmerged, "--json"], { cwd: repo }));
    fs.writeFileSync(path.join(c.worktree, "invoices.sql"), "create table invoices ();\n");
    git(c.worktree, "add", "invoices.sql");
    git(c.worktree, "commit", "-qm", "invoices");
    expect((await retasc(ada, ["done", "--id", unmerged, "--keep-worktree"], { cwd: repo })).code).toBe(0);
    const pruned = await retasc(ada, ["tidy", "--prune", "--json"], { cwd: repo });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(json(pruned).branches).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ identifier: finished, branch: a.branch, deleted: true }),
        expect.objectContaining({ identifier: unmerged, branch: c.branch, deleted: false, reason: "1 commit not merged" }),
        expect.objectContaining({ identifier: open, branch: b.branch, deleted: false, reason: "the issue is not finished" }),
      ]),
    );
    expect(fs.existsSync(c.worktree)).toBe(false);
    const branches = git(repo, "branch", "--format=%(refname:short)").stdout.trim().split("\n");
    expect(branches).not.toContain(a.branch);
    expect(branches).toEqual(expect.arrayContaining([b.branch, c.branch]));

    const unbind = await retasc(ada, ["unbind", "--json"], { cwd: repo });
    expect(unbind.code, unbind.stderr).toBe(0);
    expect(json(unbind)).toMatchObject({ prefix: "WEB", revoked: true });
    expect((await retasc(ada, ["whoami"], { cwd: repo })).stdout).toContain("This folder: not bound");
    expect(fs.existsSync(path.join(repo, ".mcp.json"))).toBe(true);
    const stale = new Client({ name: "stale", version: "1.0.0" });
    await expect(stale.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }))).rejects.toThrow();
  });
});
