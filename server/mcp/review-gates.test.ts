import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "./testing.ts";

/**
 * Review needs evidence (issue 32, decision 073) from an agent's side: the built app over HTTP,
 * the official SDK client, each refusal read and its hint followed to a write that succeeds.
 */
let seeded: SeededApp;
const clients: Client[] = [];

async function agent(who: "alice" | "bob" | "carol", prefix = "HAND"): Promise<Client> {
  const c = await connectClient(seeded.endpoint, seeded.orgs[prefix]!.people[who].key, { name: `${prefix}-${who}` });
  clients.push(c);
  return c;
}

const task = (title: string) => ({ title, work: true, changeType: "feat", noDependency: "standalone test work" });
const emailOf = async (client: Client) => (await callOk(client, "whoami")).human.email as string;

beforeAll(async () => {
  seeded = await startSeededApp(["HAND"]);
});
afterEach(({ task }) => {
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded?.app.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await seeded?.close();
});

test("entering review without handoff is refused HANDOFF_REQUIRED with an example; with it, the handoff is the checkpoint the reviewer's claim returns", async () => {
  const [alice, bob] = await Promise.all([agent("alice"), agent("bob")]);
  const bobEmail = await emailOf(bob);
  const issue = await callOk(alice, "save_issue", task("Fix the login redirect"));
  const claim = await callOk(alice, "claim_issue", { identifier: issue.identifier });
  const toReview = { identifier: issue.identifier, claimToken: claim.claimToken, status: "review", assignee: bobEmail };

  const refused = await callError(alice, "save_issue", toReview);
  expect(refused.code).toBe("HANDOFF_REQUIRED");
  expect(refused.message).toContain("handoff");
  expect(refused.hint).toMatch(/save_issue again with handoff: .*e\.g\. handoff:"/);
  // Nothing moved: alice still holds it, in doing.
  expect(await callOk(alice, "check_claim", { identifier: issue.identifier })).toMatchObject({ status: "held", youHold: true });
  expect((await callOk(alice, "get_issue", { identifier: issue.identifier })).status).toBe("doing");

  const handoff = "Login redirect fixed on rtsc-1/fix-login, PR #12, commit 3f2a9c1";
  expect(await callOk(alice, "save_issue", { ...toReview, handoff })).toMatchObject({ status: "review", lease: null });
  const review = await callOk(bob, "claim_issue", { identifier: issue.identifier });
  expect(review.checkpoint).toMatchObject({ done: handoff });
  expect(await callOk(bob, "save_issue", { identifier: issue.identifier, claimToken: review.claimToken, status: "done" })).toMatchObject({ status: "done" });
});

test("a checkpoint that says what is done is the handoff; handoff on any other write is refused", async () => {
  const [alice, bob] = await Promise.all([agent("alice"), agent("bob")]);
  const bobEmail = await emailOf(bob);
  const issue = await callOk(alice, "save_issue", task("Rotate the signing keys"));
  const claim = await callOk(alice, "claim_issue", { identifier: issue.identifier });
  const misplaced = await callError(alice, "save_issue", { identifier: issue.identifier, priority: 2, handoff: "not yet" });
  expect(misplaced.code).toBe("INVALID_INPUT");
  expect(misplaced.message).toContain("handoff goes with entering review");
  const created = await callError(alice, "save_issue", { ...task("Another"), handoff: "nothing built" });
  expect(created.code).toBe("INVALID_INPUT");

  await callOk(alice, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken, done: "keys rotated on rtsc-2/rotate" });
  const inReview = await callOk(alice, "save_issue", { identifier: issue.identifier, claimToken: claim.claimToken, status: "review", assignee: bobEmail });
  expect(inReview.status).toBe("review");
  expect((await callOk(bob, "claim_issue", { identifier: issue.identifier })).checkpoint).toMatchObject({ done: "keys rotated on rtsc-2/rotate" });
});

test("accepting a review nobody holds is refused CLAIM_REQUIRED; claiming it as the hint says, the reviewer accepts it", async () => {
  const [alice, bob] = await Promise.all([agent("alice"), agent("bob")]);
  const bobEmail = await emailOf(bob);
  const issue = await callOk(alice, "save_issue", task("Cache the rate card"));
  const claim = await callOk(alice, "claim_issue", { identifier: issue.identifier });
  await callOk(alice, "save_issue", { identifier: issue.identifier, claimToken: claim.claimToken, status: "review", assignee: bobEmail, handoff: "cached on rtsc-3/cache" });

  const accept = { identifier: issue.identifier, status: "done" };
  const refused = await callError(bob, "save_issue", accept);
  expect(refused.code).toBe("CLAIM_REQUIRED");
  expect(refused.message).toContain("in review");
  expect(refused.hint).toContain(`claim_issue {identifier:"${issue.identifier}"}`);
  expect(refused.hint).toContain("next_issue");
  expect((await callOk(bob, "get_issue", { identifier: issue.identifier })).status).toBe("review");
  // The submitter is told it is not theirs to accept, claim or not.
  expect((await callError(alice, "save_issue", accept)).code).toBe("SELF_REVIEW");

  const review = await callOk(bob, "next_issue");
  expect(review).toMatchObject({ identifier: issue.identifier });
  expect(await callOk(bob, "save_issue", { ...accept, claimToken: review.claimToken })).toMatchObject({ status: "done" });
});
