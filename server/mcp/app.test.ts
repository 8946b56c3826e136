import { expect, test } from "vitest";
import { callError, callOk, connectClient, designTools, newIssue, useSeededApp } from "./testing.ts";

/**
 * The built app as a real HTTP server, driven by the official SDK client over Streamable
 * HTTP: the must-show behaviours of the MCP surface. Tenant isolation is in app-tenants.test.ts,
 * the HTTP edge and the public pages in app-edge.test.ts.
 */
const { seeded, clients, client } = useSeededApp(["LOOP", "LANE", "BAT"]);

test("tools/list serves every tool of the design with input and output schemas", async () => {
  const alice = await client("LOOP", "alice");
  const { tools } = await alice.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual([...designTools].sort());
  for (const tool of tools) {
    expect(tool.inputSchema.type).toBe("object");
    // Left out where it would say only `{type: "object"}` (decision 091).
    if (tool.outputSchema) expect(tool.outputSchema.type, tool.name).toBe("object");
    expect(tool.description!.length, tool.name).toBeGreaterThan(60);
  }
  const save = tools.find((t) => t.name === "save_issue")!;
  expect(Object.keys(save.inputSchema.properties!)).toEqual(
    expect.arrayContaining(["identifier", "title", "body", "work", "blockedBy", "noDependency", "status", "priority", "assignee", "labels", "dueAt", "cancelReason", "parent", "claimToken"]),
  );
});

test("the full loop with two principals: file, claim, checkpoint, heartbeat, release, resume, review, promote, unblock", async () => {
  const alice = await client("LOOP", "alice");
  const bob = await client("LOOP", "bob");
  const aliceEmail = (await callOk(alice, "whoami")).human.email as string;

  const blocker = await callOk(alice, "save_issue", newIssue("Add the users table", { priority: 3 }));
  const feature = await callOk(alice, "save_issue", newIssue("Sign-up flow", { priority: 1, blockedBy: [blocker.identifier] }));
  expect(feature.openBlockers).toEqual([blocker.identifier]);
  // The small blocker inherits the urgency of what it gates.
  expect((await callOk(alice, "get_issue", { identifier: blocker.identifier })).effectiveLevel).toBe(4);

  const first = await callOk(bob, "next_issue");
  expect(first).toMatchObject({ identifier: blocker.identifier, fence: 1, otherClaims: 0, checkpoint: null });
  expect(first.claimToken).toEqual(expect.any(String));
  expect(first.branch).toMatch(/^loop-\d+\/add-the-users-table/);

  const noted = await callOk(bob, "checkpoint", {
    identifier: blocker.identifier,
    claimToken: first.claimToken,
    done: "migration written",
    next: "add the index",
    gotchas: "email must be unique",
  });
  expect(noted.checkpoint).toMatchObject({ done: "migration written", next: "add the index" });
  const beat = await callOk(bob, "heartbeat", { identifier: blocker.identifier, claimToken: first.claimToken });
  expect(Date.parse(beat.expiresAt)).toBeGreaterThanOrEqual(Date.parse(first.expiresAt));
  expect(await callOk(bob, "check_claim", { identifier: blocker.identifier })).toMatchObject({ youHold: true, held: true });
  const released = await callOk(bob, "release_issue", {
    identifier: blocker.identifier,
    claimToken: first.claimToken,
    note: "out of time, pick up from the checkpoint",
  });
  expect(released).toMatchObject({ released: true });
  expect((await callError(bob, "heartbeat", { identifier: blocker.identifier, claimToken: first.claimToken })).code).toBe("STALE_CLAIM");

  // A second agent (another session of bob, another runtime would do the same) resumes from the checkpoint.
  const session = await callOk(bob, "mint_session_key");
  const bob2 = await connectClient(seeded.endpoint, session.key, { name: "bob-session-2" });
  clients.push(bob2);
  const resumed = await callOk(bob2, "next_issue");
  expect(resumed).toMatchObject({ identifier: blocker.identifier, fence: 2 });
  expect(resumed.checkpoint).toMatchObject({ done: "migration written", next: "add the index", gotchas: "email must be unique" });
  expect(resumed.branch).toBe(first.branch);

  const inReview = await callOk(bob2, "save_issue", {
    identifier: blocker.identifier,
    status: "review",
    assignee: aliceEmail,
    claimToken: resumed.claimToken,
  });
  expect(inReview).toMatchObject({ status: "review", lease: null });
  expect(inReview.assignee.email).toBe(aliceEmail);
  // Review still blocks; the author's principal may not review its own work.
  expect((await callError(bob, "claim_issue", { identifier: feature.identifier })).code).toBe("BLOCKED");
  expect((await callError(bob, "claim_issue", { identifier: blocker.identifier })).code).toBe("SELF_REVIEW");

  const review = await callOk(alice, "next_issue");
  expect(review).toMatchObject({ identifier: blocker.identifier, fence: 3 });
  expect(review.issue.status).toBe("review");
  const promoted = await callOk(alice, "save_issue", { identifier: blocker.identifier, status: "done", claimToken: review.claimToken });
  expect(promoted.status).toBe("done");

  const unblocked = await callOk(bob, "next_issue");
  expect(unblocked).toMatchObject({ identifier: feature.identifier });
  expect(unblocked.issue.openBlockers).toEqual([]);
  await callOk(bob, "save_issue", { identifier: feature.identifier, status: "done", claimToken: unblocked.claimToken });
});

test("lanes: work assigned to someone else is counted in otherLanes and taken only with allLanes", async () => {
  const alice = await client("LANE", "alice");
  const bob = await client("LANE", "bob");
  const bobEmail = (await callOk(bob, "whoami")).human.email as string;
  const forBob = await callOk(alice, "save_issue", newIssue("Bob's lane", { assignee: bobEmail, priority: 2 }));

  const empty = await callOk(alice, "next_issue");
  expect(empty).toMatchObject({ claimed: false, ready: 0, otherLanes: 1 });
  expect(empty).not.toHaveProperty("claimToken");

  const wide = await callOk(alice, "next_issue", { allLanes: true });
  expect(wide.identifier).toBe(forBob.identifier);
  await callOk(alice, "release_issue", { identifier: forBob.identifier, claimToken: wide.claimToken });
  expect((await callOk(bob, "next_issue")).identifier).toBe(forBob.identifier);
});

test("next_batch: a peek holds nothing and returns independent work; claim:true claims it all", async () => {
  const alice = await client("BAT", "alice");
  const a = await callOk(alice, "save_issue", newIssue("A", { priority: 1 }));
  const b = await callOk(alice, "save_issue", newIssue("B", { priority: 2 }));
  await callOk(alice, "add_relation", { sourceId: a.identifier, targetId: b.identifier, type: "related" });
  const c = await callOk(alice, "save_issue", newIssue("C", { priority: 3 }));
  const d = await callOk(alice, "save_issue", newIssue("D", { blockedBy: [c.identifier] }));

  const peek = await callOk(alice, "next_batch", { n: 5 });
  expect(peek.claimed).toBe(false);
  const peeked = peek.issues.map((i: { identifier: string }) => i.identifier);
  // A and B are related (only A goes out), D waits on C.
  expect(peeked).toEqual([a.identifier, c.identifier]);
  expect((await callOk(alice, "queue_status")).liveClaims).toEqual([]);
  expect(d.openBlockers).toEqual([c.identifier]);

  const batch = await callOk(alice, "next_batch", { n: 5, claim: true });
  expect(batch.claimed).toBe(true);
  expect(batch.claims.map((claim: { identifier: string }) => claim.identifier)).toEqual(peeked);
  for (const claim of batch.claims) {
    expect(claim.claimToken).toEqual(expect.any(String));
    expect(await callOk(alice, "check_claim", { identifier: claim.identifier })).toMatchObject({ youHold: true });
  }
  const status = await callOk(alice, "queue_status");
  expect(status.liveClaims.map((l: { identifier: string }) => l.identifier).sort()).toEqual([...peeked].sort());
  expect(status.blockedOn).toEqual([{ identifier: d.identifier, blockers: [{ identifier: c.identifier, status: "doing" }] }]);
});
