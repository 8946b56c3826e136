import { describe, expect, it } from "vitest";
import { addRelation, getIssue, listIssues, saveIssue } from "../issues/index.ts";
import { nextBatch, nextIssue, queueStatus, slaSweep } from "./index.ts";
import { claimedIdentifier, create, queueWorld } from "./testing/queue-world.ts";

// The order work is handed out in, and the lanes and batches it is handed out by.
const { clock, env, fresh } = queueWorld();
const MINUTE = 60_000;

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
