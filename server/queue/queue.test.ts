import { describe, expect, it } from "vitest";
import { TestClock, testConfig } from "../testing/db.ts";
import { eq } from "drizzle-orm";
import { activity, issues, outbox, projects } from "../../db/schema/index.ts";
import { addRelation, getIssue, listIssues, saveIssue } from "../issues/index.ts";
import { bindChannel, seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import type { DomainError } from "../errors.ts";
import { useTestServices } from "../testing/database.ts";
import {
  checkClaim,
  checkpoint,
  claimIssue,
  heartbeat,
  nextBatch,
  nextIssue,
  queueStatus,
  reclaimSweep,
  releaseIssue,
  slaSweep,
} from "./index.ts";
import { RECORDED_EXPIRY } from "../metrics/index.ts";

const clock = new TestClock();
const MINUTE = 60_000;

const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: "600" }) });

async function fresh(prefix = "RTSC"): Promise<SeededOrg> {
  return seedOrg(env.services, { prefix });
}

type Ctx = SeededOrg["agents"]["alice"]["ctx"];
/** The same agent in an MCP session (the door sets it from a verified Mcp-Session-Id). */
const inSession = (ctx: Ctx, sessionId: string): Ctx => ({ ...ctx, principal: { ...ctx.principal, sessionId } });
const create = (ctx: Ctx, title: string, extra: Record<string, unknown> = {}) =>
  saveIssue(ctx, { title, work: true, changeType: "feat", noDependency: "standalone", ...extra });

async function claimedIdentifier(ctx: Ctx, args: Record<string, unknown> = {}) {
  const reply = await nextIssue(ctx, args);
  return "claimToken" in reply ? reply.identifier : null;
}

describe("issue writes", () => {
  it("numbers issues per project and requires work and a dependency declaration", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const first = await create(a, "First");
    const second = await create(a, "Second", { blockedBy: [first.identifier], noDependency: undefined });
    expect([first.identifier, second.identifier]).toEqual(["RTSC-1", "RTSC-2"]);
    expect(second.openBlockers).toEqual(["RTSC-1"]);
    await expect(saveIssue(a, { title: "x", noDependency: "n" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(saveIssue(a, { title: "x", work: true })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(saveIssue(a, { title: "x", work: true, blockedBy: ["RTSC-1"], noDependency: "n" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
  });

  it("numbers concurrent creates without gaps or collisions", async () => {
    const org = await fresh("CONC");
    const a = org.agents.alice.ctx;
    const made = await Promise.all(Array.from({ length: 40 }, (_, i) => create(a, `issue ${i}`)));
    const numbers = made.map((m) => Number(m.identifier.split("-")[1])).sort((x, y) => x - y);
    expect(numbers).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it("rejects dependency cycles and self relations", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const x = await create(a, "x");
    const y = await create(a, "y", { blockedBy: [x.identifier], noDependency: undefined });
    const z = await create(a, "z", { blockedBy: [y.identifier], noDependency: undefined });
    await expect(addRelation(a, { sourceId: z.identifier, targetId: x.identifier, type: "blocks" })).rejects.toMatchObject({
      code: "CYCLE",
    });
    await expect(addRelation(a, { sourceId: x.identifier, targetId: z.identifier, type: "blocked_by" })).rejects.toMatchObject({
      code: "CYCLE",
    });
    await expect(addRelation(a, { sourceId: x.identifier, targetId: x.identifier, type: "related" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
  });

  it("cancels only with a reason and keeps terminal issues closed", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const x = await create(a, "x");
    await expect(saveIssue(a, { identifier: x.identifier, status: "canceled" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    const canceled = await saveIssue(a, { identifier: x.identifier, status: "canceled", cancelReason: "duplicate of RTSC-9" });
    expect(canceled.cancelReason).toBe("duplicate of RTSC-9");
    await expect(saveIssue(a, { identifier: x.identifier, status: "todo" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("reads a calendar dueAt as the end of that day in the org's time zone", async () => {
    const org = await fresh();
    const issue = await create(org.agents.alice.ctx, "dated", { dueAt: "2026-12-24" });
    expect(issue.dueAt).toBe("2026-12-24T23:59:59.999Z");
    await expect(create(org.agents.alice.ctx, "bad", { dueAt: "2026-13-40" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });
});

describe("dispatch order", () => {
  it("hands a low blocker of an urgent issue out before an unrelated high", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    await create(a, "unrelated high", { priority: 2 });
    const blocker = await create(a, "low blocker", { priority: 4 });
    await create(a, "urgent feature", { priority: 1, blockedBy: [blocker.identifier], noDependency: undefined });
    expect((await getIssue(a, { identifier: blocker.identifier })).effectiveLevel).toBe(4);
    expect(await claimedIdentifier(a)).toBe(blocker.identifier);
  });

  it("puts a breached low above an urgent, and a blocker inherits a gated deadline", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    await create(a, "urgent", { priority: 1 });
    const late = await create(a, "late low", { priority: 4, dueAt: clock.now().getTime() + 10 * MINUTE });
    const blocker = await create(a, "blocks a deadline", { priority: 4 });
    await create(a, "gated by deadline", { priority: 4, dueAt: clock.now().getTime() + 100 * MINUTE, blockedBy: [blocker.identifier], noDependency: undefined });
    clock.advance(11 * MINUTE);
    expect((await getIssue(a, { identifier: late.identifier })).slaState).toBe("breached");
    const lateClaim = await nextIssue(a, {});
    expect("claimToken" in lateClaim && lateClaim.identifier).toBe(late.identifier);
    if ("claimToken" in lateClaim) await saveIssue(a, { identifier: late.identifier, claimToken: lateClaim.claimToken, status: "done" });
    clock.advance(80 * MINUTE); // 91% of the gated window: breaching, floor urgent
    await slaSweep(env.services);
    const b = await getIssue(a, { identifier: blocker.identifier });
    expect(b.effectiveLevel).toBe(4);
    expect(b.effectiveDueAt).not.toBeNull();
    // urgent (level 4, no deadline) vs blocker (level 4, inherited deadline): the deadline wins the tie.
    expect(await claimedIdentifier(a)).toBe(blocker.identifier);
  });

  it("never hands out blocked, flagged-blocked or container issues", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const first = await create(a, "first");
    await create(a, "waits", { priority: 1, blockedBy: [first.identifier], noDependency: undefined });
    await create(a, "flagged", { priority: 1, status: "blocked" });
    await saveIssue(a, { title: "epic", work: false, changeType: "feat", noDependency: "tracking", priority: 1 });
    expect(await claimedIdentifier(a)).toBe(first.identifier);
    const empty = await nextIssue(a, {});
    expect(empty).toMatchObject({ claimed: false, ready: 0, otherLanes: 0 });
  });
});

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

describe("lanes and batches", () => {
  it("keeps to the caller's lane and reports ready work in other lanes", async () => {
    const org = await fresh();
    const alice = org.agents.alice.ctx;
    await create(alice, "for carol", { assignee: org.agents.carol.userId, priority: 1 });
    const mine = await nextIssue(org.agents.bob.ctx, {});
    expect(mine).toMatchObject({ claimed: false, otherLanes: 1 });
    expect(await claimedIdentifier(org.agents.bob.ctx, { allLanes: true })).toBe("RTSC-1");
  });

  it("peeks for free, then claims mutually independent issues in one go", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const root = await create(a, "root", { priority: 1 });
    await create(a, "root's dependent", { blockedBy: [root.identifier], noDependency: undefined });
    const r1 = await create(a, "r1", { priority: 2 });
    const r2 = await create(a, "r2", { priority: 2 });
    await addRelation(a, { sourceId: r1.identifier, targetId: r2.identifier, type: "related" });
    const d = await create(a, "d", { priority: 3 });
    const peek = await nextBatch(a, { n: 5 });
    expect(peek.claimed).toBe(false);
    const peeked = "issues" in peek ? (peek.issues ?? []).map((i) => i.identifier) : [];
    expect(peeked).toEqual([root.identifier, r1.identifier, d.identifier]);
    expect((await queueStatus(a)).liveClaims).toHaveLength(0);
    const claimed = await nextBatch(a, { n: 2, claim: true });
    expect("claims" in claimed && (claimed.claims ?? []).map((c) => c.identifier)).toEqual([root.identifier, r1.identifier]);
    expect((await queueStatus(a)).liveClaims).toHaveLength(2);
  });

  it("lists in dispatch order and reports queue status", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const low = await create(a, "low", { priority: 4 });
    await create(a, "urgent", { priority: 1, blockedBy: [low.identifier], noDependency: undefined });
    const list = await listIssues(a, {});
    expect(list.issues.map((i) => i.identifier)).toEqual([low.identifier, "RTSC-2"]);
    const status = await queueStatus(a);
    expect(status.counts).toEqual({ todo: 2 });
    expect(status.ready).toBe(1);
    expect(status.blockedOn).toEqual([{ identifier: "RTSC-2", blockers: [{ identifier: low.identifier, status: "todo" }] }]);
  });
});

describe("notices", () => {
  it("queues a notice in the outbox with each finish, review, cancel, assignment and reclaim", async () => {
    const org = await fresh("NOTE");
    const { alice, bob } = org.agents;
    // done and canceled reach the author, never the actor: Bob's issues, closed by Alice, with a channel
    // of Bob's (an event nobody would hear is not written, decision 104; server/issues/finish.test.ts).
    await bindChannel(env.services, org.orgId, bob.userId);
    const done = await create(bob.ctx, "done one");
    const reviewed = await create(alice.ctx, "reviewed one");
    const canceled = await create(bob.ctx, "canceled one");
    const lapsed = await create(alice.ctx, "lapsed one");
    const c1 = await claimIssue(alice.ctx, { identifier: done.identifier });
    await saveIssue(alice.ctx, { identifier: done.identifier, claimToken: c1.claimToken, status: "done" });
    const c2 = await claimIssue(alice.ctx, { identifier: reviewed.identifier });
    await saveIssue(alice.ctx, { identifier: reviewed.identifier, claimToken: c2.claimToken, status: "review", assignee: bob.userId, handoff: "built on its branch" });
    await saveIssue(alice.ctx, { identifier: canceled.identifier, status: "canceled", cancelReason: "not needed" });
    await saveIssue(alice.ctx, { identifier: lapsed.identifier, assignee: bob.userId });
    await saveIssue(alice.ctx, { identifier: lapsed.identifier, title: "renamed" }); // no notice
    await claimIssue(bob.ctx, { identifier: lapsed.identifier });
    clock.advance(601_000);
    await reclaimSweep(env.services);
    const rows = await env.tdb.database.db.select({ payload: outbox.payload }).from(outbox).where(eq(outbox.orgId, org.orgId));
    const all = await env.tdb.database.db.select({ id: issues.id, identifier: issues.identifier }).from(issues).where(eq(issues.orgId, org.orgId));
    const idOf = new Map(all.map((r) => [r.identifier, r.id]));
    const byIssue = (identifier: string) => idOf.get(identifier);
    const seen = rows.map((r) => r.payload as { issueId: string; kind: string; actorId: string | null });
    expect(seen.map((p) => [p.issueId, p.kind]).sort()).toEqual(
      [
        [byIssue(done.identifier), "done"],
        [byIssue(reviewed.identifier), "review"],
        [byIssue(canceled.identifier), "canceled"],
        [byIssue(lapsed.identifier), "assigned"],
        [byIssue(lapsed.identifier), "reclaimed"],
      ].sort(),
    );
    expect(seen.find((p) => p.kind === "done")!.actorId).toBe(alice.userId);
    expect(seen.find((p) => p.kind === "reclaimed")!.actorId).toBeNull();
  });
});
