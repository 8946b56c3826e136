import { describe, expect, it } from "vitest";
import { getIssue, saveIssue } from "../issues/index.ts";
import { checkpoint, claimIssue, releaseIssue } from "../queue/index.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { fleetSnapshot } from "./fleet.ts";
import { issueDetail } from "./issue.ts";
import { queueInputFromSearch, queuePage } from "./queue.ts";
import { create, MINUTE, useDashServices } from "./testing.ts";

const { clock, env, dashAs } = useDashServices();

describe("queue page", () => {
  it("lists in dispatch order with own and effective level and why", async () => {
    const org = await seedOrg(env.services, { prefix: "QUE" });
    const a = org.agents.alice.ctx;
    const base = await create(a, "low blocker", { priority: 4 });
    await create(a, "urgent feature", { priority: 1, blockedBy: [base.identifier], noDependency: undefined });
    await create(a, "medium");
    await create(a, "deadline", { priority: 4, dueAt: clock.now().getTime() + 10 * MINUTE });
    clock.advance(8 * MINUTE); // 80% of the window: warning, floor high
    const dash = await dashAs(org, "alice");
    const page = await queuePage(dash, {});
    const rows = Object.fromEntries(page.issues.map((r) => [r.title, r]));
    expect(page.issues.map((r) => r.title)).toEqual(["low blocker", "urgent feature", "deadline", "medium"]);
    expect(rows["low blocker"]!.why).toMatchObject({
      priorityLevel: 1,
      ownLevel: 1,
      effectiveLevel: 4,
      inheritedFrom: { identifier: "QUE-2", raisedByDeadline: null },
    });
    expect(rows["deadline"]!.why).toMatchObject({ priorityLevel: 1, ownLevel: 3, raisedByDeadline: "warning", inheritedFrom: null });
    expect(rows["deadline"]!.slaState).toBe("warning");
    expect(rows["urgent feature"]!.openBlockers).toBe(1);
    expect(page.total).toBe(4);
  });

  it("says which deadline a blocker carries", async () => {
    const org = await seedOrg(env.services, { prefix: "DLN" });
    const a = org.agents.alice.ctx;
    const base = await create(a, "blocker");
    await create(a, "due", { dueAt: clock.now().getTime() + 100 * MINUTE, blockedBy: [base.identifier], noDependency: undefined });
    clock.advance(95 * MINUTE); // the queue page applies the threshold crossing itself, like dispatch
    const page = await queuePage(await dashAs(org, "alice"), {});
    const blocker = page.issues.find((r) => r.identifier === "DLN-1")!;
    expect(blocker.why.inheritedFrom).toEqual({ identifier: "DLN-2", raisedByDeadline: "breaching" });
    expect(blocker.why.deadlineFrom?.identifier).toBe("DLN-2");
  });

  it("splits Backlog and Active, sets pills and filters by status, runtime, priority and date", async () => {
    const org = await seedOrg(env.services, { prefix: "FIL" });
    const a = org.agents.alice.ctx;
    await create(a, "untouched", { priority: 3 });
    await create(a, "held", { priority: 2 });
    await create(a, "resumed", { priority: 2 });
    await create(a, "flag", { status: "blocked", priority: 4 });
    const held = await claimIssue(org.agents.bob.ctx, { identifier: "FIL-2" });
    const resumed = await claimIssue(org.agents.carol.ctx, { identifier: "FIL-3" });
    await checkpoint(org.agents.carol.ctx, { identifier: "FIL-3", claimToken: resumed.claimToken, next: "finish" });
    await releaseIssue(org.agents.carol.ctx, { identifier: "FIL-3", claimToken: resumed.claimToken });
    const dash = await dashAs(org, "alice");
    expect(held.identifier).toBe("FIL-2");

    const active = await queuePage(dash, { tab: "active" });
    expect(active.issues.map((r) => [r.identifier, r.pills, r.holderRuntime])).toEqual([
      ["FIL-2", { claimed: true, unheld: null, resumed: false }, "codex"],
      ["FIL-3", { claimed: false, unheld: "doing, unheld: the next claim resumes it", resumed: false }, null],
    ]);
    expect(active.counts).toEqual({ backlog: 2, active: 2, all: 4 });
    expect((await queuePage(dash, { tab: "backlog" })).issues.map((r) => r.identifier)).toEqual(["FIL-1", "FIL-4"]);
    expect((await queuePage(dash, { status: ["blocked"] })).issues.map((r) => r.identifier)).toEqual(["FIL-4"]);
    expect((await queuePage(dash, { runtime: "cursor" })).issues.map((r) => r.identifier)).toEqual(["FIL-3"]);
    expect((await queuePage(dash, { priority: [2] })).issues.map((r) => r.identifier)).toEqual(["FIL-2", "FIL-3"]);
    const today = clock.now().toISOString().slice(0, 10);
    expect((await queuePage(dash, { date: "created", from: today, to: today })).total).toBe(4);
    expect((await queuePage(dash, { date: "created", to: "2020-01-01" })).total).toBe(0);
    expect((await queuePage(dash, { date: "due", from: today })).total).toBe(0);
    expect(await queuePage(dash, { runtime: "nobody" }).then((p) => p.issues)).toEqual([]);
  });

  it("says resumed only where a previous holder existed, and an unheld doing issue in words, in the queue, the drill-down and get_issue", async () => {
    const org = await seedOrg(env.services, { prefix: "RSM" });
    const a = org.agents.alice.ctx;
    await create(a, "first claim", { priority: 2 });
    await create(a, "handed over", { priority: 2 });
    await create(a, "left in doing", { priority: 2 });
    await create(a, "set to doing by hand", { priority: 2 });
    await saveIssue(a, { identifier: "RSM-4", status: "doing" });
    // A first holder's own checkpoint resumes nothing.
    const first = await claimIssue(org.agents.bob.ctx, { identifier: "RSM-1" });
    await checkpoint(org.agents.bob.ctx, { identifier: "RSM-1", claimToken: first.claimToken, done: "half" });
    // A release without a checkpoint, then another claim: that claim resumed the work.
    const before = await claimIssue(org.agents.bob.ctx, { identifier: "RSM-2" });
    await releaseIssue(org.agents.bob.ctx, { identifier: "RSM-2", claimToken: before.claimToken });
    await claimIssue(org.agents.carol.ctx, { identifier: "RSM-2" });
    const left = await claimIssue(org.agents.carol.ctx, { identifier: "RSM-3" });
    await releaseIssue(org.agents.carol.ctx, { identifier: "RSM-3", claimToken: left.claimToken });

    const dash = await dashAs(org, "alice");
    const pills = new Map((await queuePage(dash, {})).issues.map((r) => [r.identifier, r.pills]));
    expect(Object.fromEntries(pills)).toEqual({
      "RSM-1": { claimed: true, unheld: null, resumed: false },
      "RSM-2": { claimed: true, unheld: null, resumed: true },
      "RSM-3": { claimed: false, unheld: "doing, unheld: the next claim resumes it", resumed: false },
      "RSM-4": { claimed: false, unheld: "doing, unheld: the next claim starts it", resumed: false },
    });
    for (const identifier of pills.keys()) {
      const detail = await issueDetail(dash, { identifier });
      expect(detail.pills, identifier).toEqual(pills.get(identifier));
      expect(detail.issue.held, identifier).toBe(pills.get(identifier)!.claimed);
      expect(detail.issue.statusNote, identifier).toBe(pills.get(identifier)!.unheld ?? undefined);
    }
    expect(await getIssue(a, { identifier: "RSM-3" })).toMatchObject({ status: "doing", held: false, statusNote: "doing, unheld: the next claim resumes it" });

    // A reviewer's claim after the handoff to review starts the review; it resumes nothing.
    await create(a, "to review", { priority: 2 });
    const work = await claimIssue(org.agents.bob.ctx, { identifier: "RSM-5" });
    const carol = (await issueDetail(dash, { identifier: "RSM-1" })).members.find((m) => m.email.startsWith("carol-"))!;
    await saveIssue(org.agents.bob.ctx, { identifier: "RSM-5", claimToken: work.claimToken, status: "review", assignee: carol.email, handoff: "on its branch" });
    const review = await claimIssue(org.agents.carol.ctx, { identifier: "RSM-5" });
    expect(review.fence).toBe(2);
    expect((await issueDetail(dash, { identifier: "RSM-5" })).pills).toEqual({ claimed: true, unheld: null, resumed: false });
    const moves = (await fleetSnapshot(dash)).moves.filter((m) => m.identifier === "RSM-5").map((m) => m.kind);
    expect(moves).toContain("review");
    expect(moves).not.toContain("finished");
  });

  it("searches titles and identifiers, and filters and shows the lane", async () => {
    const org = await seedOrg(env.services, { prefix: "SRC" });
    const a = org.agents.alice.ctx;
    const dash = await dashAs(org, "alice");
    const bob = (await issueDetail(dash, { identifier: (await create(a, "Rotate the signing keys")).identifier })).members.find((m) => m.email.startsWith("bob-"))!;
    await create(a, "Ship the login page", { assignee: bob.email });
    await create(a, "Login rate limits");
    const ids = async (input: Record<string, unknown>) => (await queuePage(dash, input)).issues.map((r) => r.identifier);
    expect(await ids({ q: "login" })).toEqual(["SRC-2", "SRC-3"]);
    expect(await ids({ q: "LOGIN page" })).toEqual(["SRC-2"]);
    expect(await ids({ q: "src-3" })).toEqual(["SRC-3"]);
    expect(await ids({ q: "1" })).toEqual(["SRC-1"]);
    expect(await ids({ q: "nothing like it" })).toEqual([]);
    expect(await ids({ lane: bob.email })).toEqual(["SRC-2"]);
    expect(await ids({ lane: "none" })).toEqual(["SRC-1", "SRC-3"]);
    const page = await queuePage(dash, { q: "login" });
    expect(page.issues.map((r) => r.lane)).toEqual([bob.email, null]);
    expect(page.counts.all).toBe(2);
    expect(page.lanes).toContain(bob.email);
  });

  it("reads its filters from the URL and refuses bad ones", async () => {
    const parsed = queueInputFromSearch(new URLSearchParams("tab=active&status=todo&status=doing&priority=1&runtime=&from=2026-01-02&page=2"));
    expect(parsed).toMatchObject({ tab: "active", status: ["todo", "doing"], priority: ["1"], runtime: undefined, from: "2026-01-02", page: "2" });
    const org = await seedOrg(env.services, { prefix: "BAD" });
    const dash = await dashAs(org, "alice");
    await expect(queuePage(dash, queueInputFromSearch(new URLSearchParams("status=sleeping")) as never)).rejects.toThrow();
    await expect(queuePage(dash, queueInputFromSearch(new URLSearchParams("from=2026-02-31")) as never)).rejects.toThrow();
  });

  it("pages through many issues in order", async () => {
    const org = await seedOrg(env.services, { prefix: "PAG" });
    for (let i = 0; i < 120; i++) await create(org.agents.alice.ctx, `issue ${i}`, { priority: (i % 4) + 1 });
    const dash = await dashAs(org, "alice");
    const pages = await Promise.all([1, 2, 3].map((page) => queuePage(dash, { page })));
    expect(pages.map((p) => p.issues.length)).toEqual([50, 50, 20]);
    expect(pages[0]!.pageCount).toBe(3);
    const levels = pages.flatMap((p) => p.issues.map((r) => r.why.effectiveLevel));
    expect(levels).toEqual([...levels].sort((x, y) => y - x));
    expect(new Set(pages.flatMap((p) => p.issues.map((r) => r.identifier))).size).toBe(120);
  });
});
