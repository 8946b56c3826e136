import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "./testing.ts";

/**
 * What the holder of an issue is told, from the agent's side over /mcp: a missing, wrong or
 * lost claimToken is answered with "you hold this, here is how to get the token back", and
 * following that hint finishes the issue without waiting for the lease to lapse. Also the
 * inputs an agent naturally writes (priority names, status groups).
 */
let seeded: SeededApp;
const clients: Client[] = [];

beforeAll(async () => {
  seeded = await startSeededApp(["HOLD", "PILE"]);
});
afterEach(({ task }) => {
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded?.app.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await seeded?.close();
});

/** A fresh session with the person's key: a new agent process, or the same one after a restart. */
async function session(who: "alice" | "bob" | "carol", org = "HOLD") {
  const c = await connectClient(seeded.endpoint, seeded.orgs[org]!.people[who].key, { name: who });
  clients.push(c);
  return c;
}

const task = (title: string) => ({ title, work: true, changeType: "feat", noDependency: "standalone test work" });

test("a holder finishing without its token is told it holds the issue and how to get the token back; following the hint finishes it", async () => {
  const alice = await session("alice");
  const issue = await callOk(alice, "save_issue", task("Finish without a token"));
  const claim = await callOk(alice, "claim_issue", { identifier: issue.identifier });

  const refused = await callError(alice, "save_issue", { identifier: issue.identifier, status: "done" });
  expect(refused.code).toBe("STALE_CLAIM");
  expect(refused.message).toMatch(new RegExp(`^you hold ${issue.identifier}`));
  expect(refused.hint).not.toMatch(/wait for release or expiry|next_issue/);
  expect(refused.hint).toContain(`claim_issue {identifier:"${issue.identifier}"}`);
  expect(refused.details).toMatchObject({ youHold: true });

  const back = await callOk(alice, "claim_issue", { identifier: issue.identifier });
  expect(back).toMatchObject({ identifier: issue.identifier, rebound: true, fence: claim.fence });
  expect(back.claimToken).not.toBe(claim.claimToken);
  expect(await callOk(alice, "save_issue", { identifier: issue.identifier, status: "done", claimToken: back.claimToken })).toMatchObject({
    status: "done",
  });
});

test("a holder sending another issue's token, or its own voided one, is told it holds this issue, never to stop", async () => {
  const alice = await session("alice");
  const one = await callOk(alice, "save_issue", task("Issue one"));
  const two = await callOk(alice, "save_issue", task("Issue two"));
  const claimOne = await callOk(alice, "claim_issue", { identifier: one.identifier });
  const claimTwo = await callOk(alice, "claim_issue", { identifier: two.identifier });

  for (const [name, args] of [
    ["heartbeat", { identifier: one.identifier, claimToken: claimTwo.claimToken }],
    ["checkpoint", { identifier: one.identifier, claimToken: claimTwo.claimToken, done: "half" }],
    ["save_issue", { identifier: one.identifier, status: "done", claimToken: claimTwo.claimToken }],
    ["release_issue", { identifier: one.identifier, claimToken: claimTwo.claimToken }],
  ] as const) {
    const refused = await callError(alice, name, args);
    expect(refused.message, name).toMatch(new RegExp(`^you hold ${one.identifier} .*not this claim's`));
    expect(refused.hint, name).not.toMatch(/Stop working|next_issue/);
    expect(refused.details, name).toMatchObject({ youHold: true });
  }

  // Rebinding voids the old token: using it is refused the same way, and the new one works.
  const back = await callOk(alice, "claim_issue", { identifier: one.identifier });
  expect(back).toMatchObject({ rebound: true, fence: claimOne.fence, otherClaims: 1 });
  expect((await callError(alice, "heartbeat", { identifier: one.identifier, claimToken: claimOne.claimToken })).details).toMatchObject({ youHold: true });
  await callOk(alice, "heartbeat", { identifier: one.identifier, claimToken: back.claimToken });
  await callOk(alice, "release_issue", { identifier: one.identifier, claimToken: back.claimToken });
  await callOk(alice, "release_issue", { identifier: two.identifier, claimToken: claimTwo.claimToken });
});

test("someone else is still refused: ALREADY_CLAIMED for a claim, STALE_CLAIM naming the holder for a write", async () => {
  const alice = await session("alice");
  const bob = await session("bob");
  const issue = await callOk(alice, "save_issue", task("Held by Alice"));
  const claim = await callOk(alice, "claim_issue", { identifier: issue.identifier });
  expect((await callError(bob, "claim_issue", { identifier: issue.identifier })).code).toBe("ALREADY_CLAIMED");
  const refused = await callError(bob, "save_issue", { identifier: issue.identifier, status: "done" });
  expect(refused.code).toBe("STALE_CLAIM");
  expect(refused.message).toMatch(/is held by/);
  expect(refused.details?.youHold).toBeUndefined();
  const check = await callOk(bob, "check_claim", { identifier: issue.identifier });
  expect(check).toMatchObject({ held: true, youHold: false });
  expect(check.recover).toBeUndefined();
  await callOk(alice, "release_issue", { identifier: issue.identifier, claimToken: claim.claimToken });
});

test("a scripted agent that restarts mid-issue continues by its saved token, or in its kept session, without waiting for the lease to lapse", async () => {
  const before = await session("carol");
  const issue = await callOk(before, "save_issue", task("Long job"));
  const claim = await callOk(before, "claim_issue", { identifier: issue.identifier });
  await callOk(before, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken, done: "step 1", next: "step 2" });
  const keptSession = (before as unknown as { transport: { sessionId?: string } }).transport.sessionId!;
  await before.close(); // the process dies

  // A new session of the same key is another holder until it shows the token.
  const after = await session("carol");
  expect(await callOk(after, "check_claim", { identifier: issue.identifier })).toMatchObject({ held: true, youHold: false, yourKey: true, status: "other_session" });
  expect((await callError(after, "claim_issue", { identifier: issue.identifier })).code).toBe("CLAIM_MISMATCH");
  const back = await callOk(after, "claim_issue", { identifier: issue.identifier, claimToken: claim.claimToken });
  expect(back).toMatchObject({ rebound: true, fence: claim.fence, renewal: "calls" });
  expect(back.checkpoint).toMatchObject({ done: "step 1", next: "step 2" });
  expect(new Date(back.expiresAt).getTime()).toBeGreaterThanOrEqual(new Date(claim.expiresAt).getTime());
  expect(await callOk(after, "check_claim", { identifier: issue.identifier })).toMatchObject({ status: "held", youHold: true });

  // A process that kept its session id (the watchdog proxy) is recognized without any token.
  const first = await session("carol");
  const other = await callOk(first, "save_issue", task("A second lengthy build"));
  await callOk(first, "claim_issue", { identifier: other.identifier });
  const id = (first as unknown as { transport: { sessionId?: string } }).transport.sessionId!;
  const resumed = await connectClient(seeded.endpoint, seeded.orgs.HOLD!.people.carol.key, { name: "carol", sessionId: id });
  clients.push(resumed);
  const again = await callOk(resumed, "claim_issue", { identifier: other.identifier });
  expect(again).toMatchObject({ rebound: true });
  expect((await callOk(resumed, "save_issue", { identifier: other.identifier, status: "done", claimToken: again.claimToken })).status).toBe("done");
  expect(keptSession).not.toBe(id);

  const done = await callOk(after, "save_issue", { identifier: issue.identifier, status: "done", claimToken: back.claimToken });
  expect(done.status).toBe("done");
  expect(await callOk(after, "check_claim", { identifier: issue.identifier })).toMatchObject({ held: false, issueStatus: "done", status: "unclaimed" });
  expect(Date.now()).toBeLessThan(new Date(claim.expiresAt).getTime());
});

test("checkpoints merge: a note alone keeps done/next/gotchas for the next claimant; an empty checkpoint is refused", async () => {
  const alice = await session("alice");
  const bob = await session("bob");
  const issue = await callOk(alice, "save_issue", task("Handoff"));
  const claim = await callOk(alice, "claim_issue", { identifier: issue.identifier });
  await callOk(alice, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken, done: "parser", next: "tests", gotchas: "flaky CI" });
  const noted = await callOk(alice, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken, note: "at lunch" });
  expect(noted.checkpoint).toMatchObject({ done: "parser", next: "tests", gotchas: "flaky CI", note: "at lunch" });
  const cleared = await callOk(alice, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken, gotchas: "" });
  expect(cleared.checkpoint).toMatchObject({ done: "parser", next: "tests", gotchas: null, note: null });

  const empty = await callError(alice, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken });
  expect(empty.code).toBe("INVALID_INPUT");
  expect(empty.hint).toContain("heartbeat");

  await callOk(alice, "release_issue", { identifier: issue.identifier, claimToken: claim.claimToken, note: "out of time" });
  const next = await callOk(bob, "claim_issue", { identifier: issue.identifier });
  expect(next.checkpoint).toMatchObject({ done: "parser", next: "tests", note: "out of time" });
  await callOk(bob, "release_issue", { identifier: issue.identifier, claimToken: next.claimToken });
});

test("a finish retried after it succeeded returns the finished state; following it changes nothing", async () => {
  const alice = await session("alice");
  const issue = await callOk(alice, "save_issue", task("Retry the finish"));
  const claim = await callOk(alice, "claim_issue", { identifier: issue.identifier });
  const finish = { identifier: issue.identifier, status: "done", claimToken: claim.claimToken };
  const first = await callOk(alice, "save_issue", finish);
  expect(first.status).toBe("done");
  expect(first.alreadyFinished).toBeUndefined();
  const again = await callOk(alice, "save_issue", finish);
  expect(again).toMatchObject({ identifier: issue.identifier, status: "done", alreadyFinished: true, updatedAt: first.updatedAt });
  // A retry with another token is not taken for a success.
  const bob = await session("bob");
  const wrong = await callError(bob, "save_issue", { ...finish, claimToken: "rtclm_not-the-finishers" });
  expect(wrong.code).toBe("STALE_CLAIM");
  expect(wrong.details?.alreadyFinished).toBeUndefined();
});

test("after a handoff to review, the author's late heartbeat says the issue went to review, not to claim it again", async () => {
  const alice = await session("alice");
  const bob = await session("bob");
  const bobEmail = (await callOk(bob, "whoami")).human.email as string;
  const issue = await callOk(alice, "save_issue", task("Hand off to review"));
  const claim = await callOk(alice, "claim_issue", { identifier: issue.identifier });
  const handoff = { identifier: issue.identifier, status: "review", assignee: bobEmail, claimToken: claim.claimToken, handoff: "done on its branch" };
  expect(await callOk(alice, "save_issue", handoff)).toMatchObject({ status: "review" });

  const late = await callError(alice, "heartbeat", { identifier: issue.identifier, claimToken: claim.claimToken });
  expect(late.code).toBe("STALE_CLAIM");
  expect(late.message).toMatch(/already finished it: it is review/);
  expect(late.hint).not.toMatch(/claim_issue|Claim it again/);
  expect(late.details).toMatchObject({ alreadyFinished: true, status: "review" });
  expect(await callOk(alice, "save_issue", handoff)).toMatchObject({ status: "review", alreadyFinished: true });
  expect((await callOk(bob, "claim_issue", { identifier: issue.identifier })).identifier).toBe(issue.identifier);
});

test("inputs an agent naturally writes work: priority names, and the status groups open and active; a wrong status lists what is accepted", async () => {
  const alice = await session("alice");
  const urgent = await callOk(alice, "save_issue", { ...task("Named priority"), priority: "urgent" });
  expect(urgent.priority).toBe(1);
  expect((await callOk(alice, "save_issue", { identifier: urgent.identifier, priority: "low" })).priority).toBe(4);
  expect((await callOk(alice, "save_issue", { identifier: urgent.identifier, priority: 2 })).priority).toBe(2);
  const badPriority = await callError(alice, "save_issue", { ...task("Bad priority"), priority: "critical" });
  expect(badPriority.code).toBe("INVALID_INPUT");
  expect(badPriority.message).toContain('"urgent" (1)');

  const waiting = await callOk(alice, "save_issue", task("Waiting in todo"));
  const claim = await callOk(alice, "claim_issue", { identifier: urgent.identifier });
  const active = await callOk(alice, "list_issues", { status: "active", limit: 200 });
  expect(active.issues.map((i: { identifier: string }) => i.identifier)).toContain(urgent.identifier);
  expect(active.issues.every((i: { status: string }) => ["doing", "review"].includes(i.status))).toBe(true);
  const open = await callOk(alice, "list_issues", { status: ["open"], limit: 200 });
  expect(open.issues.every((i: { status: string }) => ["todo", "doing", "blocked", "review"].includes(i.status))).toBe(true);
  expect(open.issues.map((i: { identifier: string }) => i.identifier)).toEqual(expect.arrayContaining([urgent.identifier, waiting.identifier]));
  expect(active.issues.map((i: { identifier: string }) => i.identifier)).not.toContain(waiting.identifier);
  expect((await callOk(alice, "list_issues", { status: ["active", "todo"], limit: 200 })).issues.length).toBe(open.issues.filter((i: { status: string }) => i.status !== "blocked").length);

  const wrong = await callError(alice, "list_issues", { status: "in_progress" });
  expect(wrong.code).toBe("INVALID_INPUT");
  expect(wrong.message).toContain("todo, doing, blocked, review, done, canceled, or a group: open");
  await callOk(alice, "release_issue", { identifier: urgent.identifier, claimToken: claim.claimToken });
});

test("next_issue from a key already holding claims says which, so the agent resumes instead of piling up claims", async () => {
  const carol = await session("carol", "PILE");
  const first = await callOk(carol, "save_issue", task("Held first"));
  const second = await callOk(carol, "save_issue", task("Taken next"));
  const fresh = await callOk(carol, "claim_issue", { identifier: first.identifier });
  expect(fresh.activeClaims).toBeUndefined();
  const next = await callOk(carol, "next_issue");
  expect(next).toMatchObject({ identifier: second.identifier, otherClaims: 1, activeClaims: [first.identifier] });
  const empty = await callOk(carol, "next_issue");
  expect(empty).toMatchObject({ claimed: false, activeClaims: [first.identifier, second.identifier] });
  expect(empty.message).toContain(`You already hold ${first.identifier}, ${second.identifier}`);
  // Following it: resume, and the reply no longer lists what was finished.
  await callOk(carol, "save_issue", { identifier: first.identifier, status: "done", claimToken: fresh.claimToken });
  expect((await callOk(carol, "next_issue")).activeClaims).toEqual([second.identifier]);
});

test("release_issue answers with the status the issue is left in and says it is unheld; reads say what the next claim does", async () => {
  const alice = await session("alice");
  const bob = await session("bob");
  const issue = await callOk(alice, "save_issue", task("Release and resume"));
  const claim = await callOk(alice, "claim_issue", { identifier: issue.identifier });
  // The claim itself says it is held (its token and expiry); the issue in it does not say so again.
  expect(claim.issue).toMatchObject({ status: "doing" });
  expect(claim.issue).not.toHaveProperty("held");
  expect(claim.issue.statusNote).toBeUndefined();
  expect(await callOk(alice, "get_issue", { identifier: issue.identifier })).toMatchObject({ status: "doing", held: true });

  const released = await callOk(alice, "release_issue", { identifier: issue.identifier, claimToken: claim.claimToken, note: "stuck" });
  expect(released).toMatchObject({ identifier: issue.identifier, released: true, status: "doing", held: false });
  expect(released.message).toBe(`Released: ${issue.identifier} is doing, unheld: the next claim resumes it. Your claimToken is dead.`);
  expect(await callOk(bob, "get_issue", { identifier: issue.identifier })).toMatchObject({
    status: "doing",
    held: false,
    lease: null,
    statusNote: "doing, unheld: the next claim resumes it",
  });

  // Set aside while held: the release says it is not dispatched in that status.
  const resumed = await callOk(bob, "claim_issue", { identifier: issue.identifier });
  await callOk(bob, "save_issue", { identifier: issue.identifier, status: "blocked" });
  const aside = await callOk(bob, "release_issue", { identifier: issue.identifier, claimToken: resumed.claimToken });
  expect(aside).toMatchObject({ status: "blocked", held: false, message: `Released: ${issue.identifier} is blocked, unheld: not dispatched while blocked. Your claimToken is dead.` });
});
