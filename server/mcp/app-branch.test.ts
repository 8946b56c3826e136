import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { callOk, connectClient, startSeededApp, type SeededApp } from "./testing.ts";

/**
 * The branch to work on, from the agent's side over /mcp: named from the title at the first
 * claim, and the same for every later claimant however the issue is renamed meanwhile (after a
 * release or a lapsed lease), unless an agent names another one in a checkpoint.
 */
const LEASE_SECONDS = 2;
let seeded: SeededApp;
const clients: Client[] = [];

beforeAll(async () => {
  seeded = await startSeededApp(["BRA", "BRB"], { LEASE_TTL_SECONDS: String(LEASE_SECONDS) });
});
afterEach(({ task }) => {
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded?.app.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await seeded?.close();
});

async function session(who: "alice" | "bob" | "carol", org: string) {
  const c = await connectClient(seeded.endpoint, seeded.orgs[org]!.people[who].key, { name: who });
  clients.push(c);
  return c;
}

const task = (title: string) => ({ title, work: true, changeType: "feat", noDependency: "standalone test work" });

test("the branch named at the first claim stays the issue's through renames, a release and a named checkpoint branch", async () => {
  const [alice, bob, carol] = [await session("alice", "BRA"), await session("bob", "BRA"), await session("carol", "BRA")];
  const issue = await callOk(alice, "save_issue", task("Fix the login redirect"));
  const id = issue.identifier as string;
  // Before anyone claims it, the branch follows the title.
  await callOk(alice, "save_issue", { identifier: id, title: "Fix the Login Redirect on Safari" });

  const first = await callOk(bob, "claim_issue", { identifier: id });
  const branch = `${id.toLowerCase()}/fix-the-login-redirect-on-safari`;
  expect(first.branch).toBe(branch);
  // Said once, at the top: the claimed issue leaves out what the claim states.
  expect(first.issue).not.toHaveProperty("branch");

  await callOk(bob, "save_issue", { identifier: id, title: "Safari drops the session cookie", claimToken: first.claimToken });
  await callOk(bob, "release_issue", { identifier: id, claimToken: first.claimToken });
  await callOk(alice, "save_issue", { identifier: id, title: "Session cookie lost on Safari" });
  // Reads (get_issue, the Dash) name the same branch while nobody holds it.
  expect(await callOk(alice, "get_issue", { identifier: id })).toMatchObject({ branch });

  const second = await callOk(carol, "claim_issue", { identifier: id });
  expect(second).toMatchObject({ fence: 2, branch, issue: { title: "Session cookie lost on Safari" } });

  // An agent that names another branch in a checkpoint hands that one on.
  await callOk(carol, "checkpoint", { identifier: id, claimToken: second.claimToken, branch: "fix/safari-cookie" });
  await callOk(carol, "release_issue", { identifier: id, claimToken: second.claimToken });
  expect(await callOk(bob, "claim_issue", { identifier: id })).toMatchObject({ fence: 3, branch: "fix/safari-cookie" });
});

test("a claimant after a lapsed lease gets the branch the first claim named, not the renamed title's", async () => {
  const [alice, bob] = [await session("alice", "BRB"), await session("bob", "BRB")];
  const issue = await callOk(alice, "save_issue", task("Speed up the nightly export"));
  const id = issue.identifier as string;

  const first = await callOk(alice, "next_issue");
  const branch = `${id.toLowerCase()}/speed-up-the-nightly-export`;
  expect(first).toMatchObject({ identifier: id, branch });
  await callOk(alice, "save_issue", { identifier: id, title: "Export runs out of memory", claimToken: first.claimToken });

  await new Promise((r) => setTimeout(r, LEASE_SECONDS * 1000 + 500));
  expect(await callOk(bob, "next_issue")).toMatchObject({ identifier: id, fence: 2, branch, issue: { title: "Export runs out of memory" } });
});
