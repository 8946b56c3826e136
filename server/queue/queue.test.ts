import { describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { activity, issues, projects } from "../../db/schema/index.ts";
import { getIssue, saveIssue } from "../issues/index.ts";
import type { DomainError } from "../errors.ts";
import { checkClaim, checkpoint, claimIssue, heartbeat, nextBatch, nextIssue, reclaimSweep, releaseIssue } from "./index.ts";
import { RECORDED_EXPIRY } from "../metrics/index.ts";
import { claimedIdentifier, create, queueWorld, type Ctx } from "./testing/queue-world.ts";

// Claims, their tokens and leases, and review; dispatch order and lanes are in
// queue-dispatch.test.ts, issue writes and their notices in queue-writes.test.ts.
const { clock, env, fresh } = queueWorld();

/** The same agent in an MCP session (the door sets it from a verified Mcp-Session-Id). */
const inSession = (ctx: Ctx, sessionId: string): Ctx => ({ ...ctx, principal: { ...ctx.principal, sessionId } });

describe("claims and fencing", () => {
  it("a restart on another key continues by the token alone: without it the lease stays put, with it the lease moves (same fence, old token void)", async () => {
    const org = await fresh();
    const x = await create(org.agents.alice.ctx, "restart me");
    const first = await claimIssue(org.agents.alice.ctx, { identifier: x.identifier });
    const restarted = (await org.agentFor("alice", "claude-code")).ctx;
    await expect(claimIssue(restarted, { identifier: x.identifier })).rejects.toMatchObject({ code: "ALREADY_CLAIMED" });
    expect(await checkClaim(restarted, { identifier: x.identifier })).toMatchObject({ youHold: false, status: "other_session" });
    const wrong = await heartbeat(restarted, { identifier: x.identifier, claimToken: "rtclm_wrong" }).catch((error: DomainError) => error);
    expect(wrong).toMatchObject({ code: "STALE_CLAIM", message: expect.stringMatching(/is held by/) });
    const back = await claimIssue(restarted, { identifier: x.identifier, claimToken: first.claimToken });
    expect(back).toMatchObject({ rebound: true, fence: first.fence, otherClaims: 0 });
    await expect(heartbeat(org.agents.alice.ctx, { identifier: x.identifier, claimToken: first.claimToken })).rejects.toMatchObject({
      code: "STALE_CLAIM",
    });
    expect(await heartbeat(restarted, { identifier: x.identifier, claimToken: back.claimToken })).toMatchObject({ fence: first.fence });
  });

  it("returns token, fence, expiry, branch and count of other claims; refuses a second holder", async () => {
    const org = await fresh();
    const a = inSession(org.agents.alice.ctx, "session-a");
    const b = org.agents.bob.ctx;
    const x = await create(a, "Fix the Login redirect!");
    await create(a, "another");
    const claim = await claimIssue(a, { identifier: x.identifier });
    expect(claim.claimToken).toMatch(/^rtclm_/);
    expect(claim.fence).toBe(1);
    expect(claim.branch).toBe("rtsc-1/fix-the-login-redirect");
    expect(new Date(claim.expiresAt).getTime()).toBe(clock.now().getTime() + 600_000);
    expect(claim.otherClaims).toBe(0);
    const second = await nextIssue(a, {});
    expect("claimToken" in second && second.otherClaims).toBe(1);
    await expect(claimIssue(b, { identifier: x.identifier })).rejects.toMatchObject({ code: "ALREADY_CLAIMED" });
    expect(await checkClaim(a, { identifier: x.identifier })).toMatchObject({ youHold: true, held: true, status: "held", renewedByYourCalls: true });
    expect(await checkClaim(b, { identifier: x.identifier })).toMatchObject({ youHold: false, held: true, status: "other_session" });
    // The same key without a session cannot be told apart from another agent on it.
    expect(await checkClaim(org.agents.alice.ctx, { identifier: x.identifier })).toMatchObject({ youHold: false, status: "unknown_session" });
  });

  it("refuses every write with a superseded token, naming the current holder", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const b = org.agents.bob.ctx;
    const x = await create(a, "x");
    const first = await claimIssue(a, { identifier: x.identifier });
    await checkpoint(a, { identifier: x.identifier, claimToken: first.claimToken, done: "half", next: "rest", gotchas: "flaky test" });
    clock.advance(601_000);
    const second = await claimIssue(b, { identifier: x.identifier });
    expect(second.fence).toBe(2);
    expect(second.checkpoint).toMatchObject({ done: "half", next: "rest", gotchas: "flaky test" });
    const stale = { identifier: x.identifier, claimToken: first.claimToken };
    for (const write of [
      () => heartbeat(a, stale),
      () => checkpoint(a, { ...stale, note: "late" }),
      () => releaseIssue(a, stale),
      () => saveIssue(a, { ...stale, status: "done" }),
    ]) {
      const error = await write().then(() => null, (e: unknown) => e);
      expect(error).toMatchObject({ code: "STALE_CLAIM" });
      expect((error as { details: { holder: { runtime: string } } }).details.holder.runtime).toBe("codex");
    }
    const after = await getIssue(a, { identifier: x.identifier });
    expect(after.status).toBe("doing");
    expect(after.lease?.runtime).toBe("codex");
    expect(after.checkpoint?.note).toBeNull();
  });

  it("makes an expired issue dispatchable at once and the reclaim sweep records it", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const x = await create(a, "x");
    const claim = await claimIssue(a, { identifier: x.identifier });
    clock.advance(599_000);
    await heartbeat(a, { identifier: x.identifier, claimToken: claim.claimToken });
    clock.advance(599_000);
    expect((await checkClaim(a, { identifier: x.identifier })).held).toBe(true);
    clock.advance(2_000);
    expect((await checkClaim(a, { identifier: x.identifier })).held).toBe(false);
    expect((await reclaimSweep(env.services)).reclaimed).toBeGreaterThanOrEqual(1);
    expect(await reclaimSweep(env.services)).toEqual({ reclaimed: 0 });
    const kinds = await env.tdb.database.db
      .select({ kind: activity.kind, runtime: activity.runtime })
      .from(activity)
      .where(eq(activity.issueId, (await env.tdb.database.db.select({ id: issues.id }).from(issues).where(eq(issues.orgId, org.orgId)))[0]!.id));
    expect(kinds.filter((k) => k.kind === "reclaimed")).toHaveLength(1);
    await expect(heartbeat(a, { identifier: x.identifier, claimToken: claim.claimToken })).rejects.toMatchObject({ code: "STALE_CLAIM" });
    expect(await claimedIdentifier(org.agents.bob.ctx)).toBe(x.identifier);
  });

  it("marks a claim that ended and recorded an expired lease itself, on every claiming door (/metrics counts it as by=claim)", async () => {
    const org = await fresh();
    // Four lapses in a row would quarantine it at the third (decision 055; quarantine.test.ts): here only who records each counts.
    await env.tdb.database.db.update(projects).set({ quarantineAfter: 10 }).where(eq(projects.id, org.projectId));
    const a = org.agents.alice.ctx;
    const b = org.agents.bob.ctx;
    const x = await create(a, "x");
    const first = await claimIssue(a, { identifier: x.identifier });
    expect(first[RECORDED_EXPIRY]).toBe(false);
    expect(JSON.parse(JSON.stringify(first))).not.toHaveProperty("recordedExpiry");
    clock.advance(601_000);
    // No sweep ran: the claim records the expiry.
    expect((await claimIssue(b, { identifier: x.identifier }))[RECORDED_EXPIRY]).toBe(true);
    clock.advance(601_000);
    // The sweep got there first: the claim has nothing left to record.
    expect((await reclaimSweep(env.services)).reclaimed).toBeGreaterThanOrEqual(1);
    const afterSweep = await nextIssue(a, {});
    expect(afterSweep).toMatchObject({ identifier: x.identifier, fence: 3 });
    expect("claimToken" in afterSweep && afterSweep[RECORDED_EXPIRY]).toBe(false);
    clock.advance(601_000);
    const byNext = await nextIssue(b, {});
    expect(byNext).toMatchObject({ identifier: x.identifier, fence: 4 });
    expect("claimToken" in byNext && byNext[RECORDED_EXPIRY]).toBe(true);
    clock.advance(601_000);
    const batch = await nextBatch(a, { claim: true, n: 2 });
    expect(batch.claims?.map((claim) => [claim.fence, claim[RECORDED_EXPIRY]])).toEqual([[5, true]]);
    // Each expiry recorded once, by whoever got there first.
    const [row] = await env.tdb.database.db.select({ id: issues.id }).from(issues).where(eq(issues.orgId, org.orgId));
    const reclaimed = await env.tdb.database.db.select({ kind: activity.kind, facts: activity.facts }).from(activity).where(eq(activity.issueId, row!.id));
    const by = reclaimed
      .filter((r) => r.kind === "reclaimed")
      .map((r) => r.facts as { fence: number; by: string })
      .sort((p, q) => p.fence - q.fence)
      .map((f) => f.by);
    expect(by).toEqual(["claim", "sweep", "claim", "claim"]);
  });

  it("release keeps the status and the checkpoint; a status write never frees a lease", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const x = await create(a, "x");
    const claim = await claimIssue(a, { identifier: x.identifier });
    await saveIssue(a, { identifier: x.identifier, status: "todo" });
    expect((await checkClaim(a, { identifier: x.identifier })).held).toBe(true);
    await releaseIssue(a, { identifier: x.identifier, claimToken: claim.claimToken, note: "stopped at step 2" });
    const again = await claimIssue(org.agents.bob.ctx, { identifier: x.identifier });
    expect(again.checkpoint?.note).toBe("stopped at step 2");
  });

  it("after release the old token is refused naming the next holder, and a late finish changes nothing", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const x = await create(a, "x");
    const first = await claimIssue(a, { identifier: x.identifier });
    await checkpoint(a, { identifier: x.identifier, claimToken: first.claimToken, done: "parser", next: "tests" });
    await releaseIssue(a, { identifier: x.identifier, claimToken: first.claimToken, note: "out of time" });
    const stale = { identifier: x.identifier, claimToken: first.claimToken };
    await expect(heartbeat(a, stale)).rejects.toMatchObject({ code: "STALE_CLAIM", details: { holder: null } });
    const second = await claimIssue(org.agents.carol.ctx, { identifier: x.identifier });
    expect(second.checkpoint).toMatchObject({ done: "parser", next: "tests", note: "out of time" });
    await expect(saveIssue(a, { ...stale, status: "done" })).rejects.toMatchObject({
      code: "STALE_CLAIM",
      details: { holder: { runtime: "cursor" } },
    });
    const after = await getIssue(a, { identifier: x.identifier });
    expect({ status: after.status, fence: after.fence, holder: after.lease?.runtime }).toEqual({ status: "doing", fence: 2, holder: "cursor" });
  });

  it("caps live claims per key", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    for (let i = 0; i < 8; i++) await create(a, `i${i}`);
    for (let i = 0; i < 7; i++) expect(await claimedIdentifier(a)).not.toBeNull();
    await expect(nextIssue(a, {})).rejects.toMatchObject({ code: "CLAIM_CAP" });
    await expect(claimIssue(a, { identifier: "RTSC-8" })).rejects.toMatchObject({ code: "CLAIM_CAP" });
  });

  it("names the reason of every refusal", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const first = await create(a, "first");
    const blocked = await create(a, "blocked", { blockedBy: [first.identifier], noDependency: undefined });
    const epic = await saveIssue(a, { title: "epic", work: false, changeType: "feat", noDependency: "tracking" });
    const flagged = await create(a, "flagged", { status: "blocked" });
    await expect(claimIssue(a, { identifier: blocked.identifier })).rejects.toMatchObject({
      code: "BLOCKED",
      details: { openBlockers: [{ identifier: first.identifier, status: "todo" }] },
    });
    await expect(claimIssue(a, { identifier: epic.identifier })).rejects.toMatchObject({ code: "CONTAINER" });
    await expect(claimIssue(a, { identifier: flagged.identifier })).rejects.toMatchObject({ code: "STATUS_NOT_CLAIMABLE" });
    await expect(claimIssue(a, { identifier: "RTSC-99" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("review", () => {
  it("author finishes into review, another principal reviews and promotes; dependents unblock", async () => {
    const org = await fresh();
    const alice = org.agents.alice;
    const bob = org.agents.bob;
    const x = await create(alice.ctx, "feature");
    const gated = await create(alice.ctx, "after feature", { blockedBy: [x.identifier], noDependency: undefined });
    const claim = await claimIssue(alice.ctx, { identifier: x.identifier });
    await checkpoint(alice.ctx, { identifier: x.identifier, claimToken: claim.claimToken, done: "built it" });
    await expect(saveIssue(alice.ctx, { identifier: x.identifier, claimToken: claim.claimToken, status: "review" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
    await expect(
      saveIssue(alice.ctx, { identifier: x.identifier, claimToken: claim.claimToken, status: "review", assignee: "me" }),
    ).rejects.toMatchObject({ code: "SELF_REVIEW" });
    const inReview = await saveIssue(alice.ctx, {
      identifier: x.identifier,
      claimToken: claim.claimToken,
      status: "review",
      assignee: bob.userId,
    });
    expect(inReview.status).toBe("review");
    expect(inReview.lease).toBeNull();
    // review still blocks; the author's other agent may not take the review
    await expect(claimIssue(alice.ctx, { identifier: gated.identifier })).rejects.toMatchObject({ code: "BLOCKED" });
    const aliceOther = await org.agentFor("alice", "opencode");
    await expect(claimIssue(aliceOther.ctx, { identifier: x.identifier })).rejects.toMatchObject({ code: "SELF_REVIEW" });
    expect(await claimedIdentifier(aliceOther.ctx, { allLanes: true })).toBeNull();
    const review = await nextIssue(bob.ctx, {});
    expect("claimToken" in review && review.identifier).toBe(x.identifier);
    if (!("claimToken" in review)) throw new Error("unreachable");
    expect(review.issue.status).toBe("review");
    expect(review.checkpoint?.done).toBe("built it");
    await saveIssue(bob.ctx, { identifier: x.identifier, claimToken: review.claimToken, status: "done" });
    expect(await claimedIdentifier(alice.ctx)).toBe(gated.identifier);
  });
});
