import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { FakeForge } from "../../test/fakes/git-forge.ts";
import { startFakeGithub } from "../../test/fakes/github.ts";
import { boundFolder, git, removeTemps, retasc, startServer, type Person, type Server } from "./testing.ts";

/**
 * `retasc done` sends the branch's open pull request as evidence (decision 063), against the
 * built app over HTTP and a local fake GitHub (the app's GITHUB_API_URL): the server finds it
 * through the project's connector, so the CLI holds no forge token; none found is said and the
 * finish goes on without one; --pr wins over the lookup; with no connector, GITHUB_TOKEN in the
 * environment asks the forge of the checkout's origin.
 */
const TOKEN = "ghp_done_lookup";
let github: FakeForge;
let server: Server;
let ada: Person;
let agent: Client;
let repo: string;
let orgId: string;
// No forge token of the machine running the tests reaches the CLI unless a test gives one.
const noTokens = { GITHUB_TOKEN: undefined, GH_TOKEN: undefined, GITLAB_TOKEN: undefined, GITHUB_API_URL: undefined };

beforeAll(async () => {
  github = await startFakeGithub({ token: TOKEN });
  server = await startServer({ GITHUB_API_URL: github.url });
  ({ person: ada, repo, client: agent } = await boundFolder(server, "Ada"));
  orgId = ((await agent.callTool({ name: "whoami", arguments: {} })).structuredContent as { org: { id: string } }).org.id;
});
afterAll(async () => {
  await agent?.close();
  await server?.close();
  await github?.close();
  removeTemps();
});

const tool = async (name: string, args: Record<string, unknown> = {}): Promise<any> => (await agent.callTool({ name, arguments: args })).structuredContent;
const json = (result: { stdout: string }) => JSON.parse(result.stdout);

/** Files an issue, claims it into a worktree and commits there; returns the claim. */
async function claimWithCommit(title: string): Promise<{ identifier: string; branch: string; worktree: string }> {
  const { identifier } = await tool("save_issue", { title, work: true, changeType: "feat", noDependency: "test work" });
  const claimed = json(await retasc(ada, ["claim", identifier, "--json"], { cwd: repo, env: noTokens }));
  fs.writeFileSync(path.join(claimed.worktree, `${identifier}.txt`), "work\n");
  git(claimed.worktree, "add", ".");
  expect(git(claimed.worktree, "commit", "-q", "-m", title).status).toBe(0);
  return { identifier, branch: claimed.branch, worktree: claimed.worktree };
}

const pullLookups = () => github.requests.filter((r) => /\/pulls$/.test(r.path)).length;

it("with no connector and no token in the environment: the finish goes without a request, and a line says why", async () => {
  const claim = await claimWithCommit("No connector yet");
  const done = await retasc(ada, ["done"], { cwd: claim.worktree, env: noTokens });
  expect(done.code, done.stderr).toBe(0);
  expect(done.stdout).toContain("No pull/merge request looked up: the project has no GitHub or GitLab connector with a token.");
  expect((await tool("get_issue", { identifier: claim.identifier })).evidence).toMatchObject({ branch: claim.branch, pr: null });
});

it("through the project's connector: the open request found is sent; none found is said; --pr wins", async () => {
  const added = await retasc(ada, ["connector", "add", "github", "acme/web", "--project", "WEB", "--token-stdin", "--org-id", orgId, "--url", server.url], { input: `${TOKEN}\n` });
  expect(added.code, added.stderr).toBe(0);

  const found = await claimWithCommit("Has a pull request");
  github.pulls.push({ repo: "acme/web", branch: found.branch, number: 12, state: "open" }, { repo: "acme/web", branch: found.branch, number: 8, state: "closed" });
  const head = git(found.worktree, "rev-parse", "HEAD").stdout.trim();
  const done = await retasc(ada, ["done", "--json"], { cwd: found.worktree, env: noTokens });
  expect(done.code, done.stderr).toBe(0);
  expect(json(done)).toMatchObject({
    identifier: found.identifier,
    status: "done",
    evidence: { commit: head, branch: found.branch, pr: "https://github.com/acme/web/pull/12" },
    requestLookup: "found pull request https://github.com/acme/web/pull/12",
  });

  const none = await claimWithCommit("Has no pull request");
  const noPr = await retasc(ada, ["done"], { cwd: none.worktree, env: noTokens });
  expect(noPr.code, noPr.stderr).toBe(0);
  expect(noPr.stdout).toContain(`No open pull/merge request found for ${none.branch} in acme/web.`);
  expect((await tool("get_issue", { identifier: none.identifier })).evidence).toMatchObject({ branch: none.branch, pr: null });

  const explicit = await claimWithCommit("Named by hand");
  github.pulls.push({ repo: "acme/web", branch: explicit.branch, number: 30, state: "open" });
  const asked = pullLookups();
  const withPr = await retasc(ada, ["done", "--pr", "99", "--json"], { cwd: explicit.worktree, env: noTokens });
  expect(withPr.code, withPr.stderr).toBe(0);
  expect(json(withPr).evidence).toMatchObject({ branch: explicit.branch, pr: "99" });
  expect(json(withPr)).not.toHaveProperty("requestLookup");
  expect(pullLookups()).toBe(asked);
  expect(github.problems).toEqual([]);

  // The connector revoked: GITHUB_TOKEN from the environment asks the forge of the checkout's origin itself.
  const list = json(await retasc(ada, ["connector", "list", "--org-id", orgId, "--url", server.url, "--json"])) as { connectors: { id: string }[] };
  expect((await retasc(ada, ["connector", "revoke", list.connectors[0]!.id, "--org-id", orgId, "--url", server.url])).code).toBe(0);
  const fromEnv = await claimWithCommit("Found with the environment's token");
  git(fromEnv.worktree, "remote", "add", "origin", "https://github.com/acme/web.git");
  github.pulls.push({ repo: "acme/web", branch: fromEnv.branch, number: 41, state: "open" });
  const envDone = await retasc(ada, ["done", "--json"], { cwd: fromEnv.worktree, env: { ...noTokens, GITHUB_TOKEN: TOKEN, GITHUB_API_URL: github.url } });
  expect(envDone.code, envDone.stderr).toBe(0);
  expect(json(envDone)).toMatchObject({ evidence: { pr: "https://github.com/acme/web/pull/41" }, requestLookup: "found pull request https://github.com/acme/web/pull/41 (GITHUB_TOKEN)" });
  expect(github.problems).toEqual([]);
});
