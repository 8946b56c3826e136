import { describe, expect, it } from "vitest";
import { TestClock, testConfig } from "../testing/db.ts";
import type { Ctx } from "../context.ts";
import { saveComment } from "../issues/comments.ts";
import { getIssue, saveIssue } from "../issues/index.ts";
import { humanCtx } from "../orgs/access.ts";
import { checkpoint, claimIssue, heartbeat, reclaimSweep, releaseIssue } from "../queue/index.ts";
import { forceRelease } from "../queue/force-release.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { fleetSnapshot } from "./fleet.ts";
import { issueDetail } from "./issue.ts";
import { queueInputFromSearch, queuePage } from "./queue.ts";

const clock = new TestClock();
const MINUTE = 60_000;

const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: "600" }) });

const create = (ctx: Ctx, title: string, extra: Record<string, unknown> = {}) =>
  saveIssue(ctx, { title, work: true, changeType: "feat", noDependency: "standalone", ...extra });

async function dashAs(org: SeededOrg, who: "alice" | "bob" | "carol"): Promise<Ctx> {
  return (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents[who].userId, runtime: "dash" })).ctx;
}

describe("fleet snapshot", () => {
  it("shows each claim with runtime, human, key, lease, heartbeat and latest checkpoint", async () => {
    const org = await seedOrg(env.services, { prefix: "FLT" });
    const bob = org.agents.bob.ctx;
    await create(org.agents.alice.ctx, "Write the parser", { priority: 2 });
    const claim = await claimIssue(bob, { identifier: "FLT-1" });
    clock.advance(MINUTE);
    await checkpoint(bob, { identifier: "FLT-1", claimToken: claim.claimToken, done: "tokenizer", next: "the grammar" });
    const fleet = await fleetSnapshot(await dashAs(org, "alice"));
    expect(fleet.claims).toHaveLength(1);
    const [c] = fleet.claims;
    expect(c).toMatchObject({
      identifier: "FLT-1",
      title: "Write the parser",
      runtime: "codex",
      human: "Bob",
      keyPrefix: org.agents.bob.key.slice(0, 12),
      expired: false,
      heartbeatAt: clock.now().toISOString(),
      expiresAt: new Date(clock.now().getTime() + 600_000).toISOString(),
      checkpoint: { runtime: "codex", done: "tokenizer", next: "the grammar" },
    });
    expect(fleet.counts.held).toBe(1);
    expect(fleet.moves[0]).toMatchObject({ kind: "claimed", identifier: "FLT-1", runtime: "codex" });
    // No MCP session (a direct call): none named; the checkpoint renewed it by heartbeat.
    expect(c).toMatchObject({ session: null, renewedBy: "heartbeat" });
  });

  it("names the MCP session holding each claim (a label, never the id) and whether its calls or a heartbeat renewed it, on the Fleet and the issue page", async () => {
    const org = await seedOrg(env.services, { prefix: "SES" });
    const inSession = (sessionId: string): Ctx => ({ ...org.agents.bob.ctx, principal: { ...org.agents.bob.ctx.principal, sessionId } });
    const [one, two] = [inSession("session-one-of-bobs-key"), inSession("session-two-of-bobs-key")];
    await create(org.agents.alice.ctx, "first");
    await create(org.agents.alice.ctx, "second");
    await claimIssue(one, { identifier: "SES-1" });
    await claimIssue(two, { identifier: "SES-2" });
    clock.advance(MINUTE);
    await heartbeat(two, { identifier: "SES-2" });
    const fleet = await fleetSnapshot(await dashAs(org, "alice"));
    const [a, b] = ["SES-1", "SES-2"].map((identifier) => fleet.claims.find((c) => c.identifier === identifier)!);
    expect(a!.session).toMatch(/^[0-9a-f]{8}$/);
    expect(b!.session).toMatch(/^[0-9a-f]{8}$/);
    expect(a!.session).not.toBe(b!.session);
    expect(JSON.stringify(fleet)).not.toContain("session-one-of-bobs-key");
    expect(a).toMatchObject({ renewedBy: null, keyPrefix: b!.keyPrefix });
    expect(b).toMatchObject({ renewedBy: "heartbeat" });
    const detail = await issueDetail(await dashAs(org, "alice"), { identifier: "SES-2" });
    expect(detail.leaseSession).toEqual({ session: b!.session, renewedBy: "heartbeat", renewedAt: clock.now().toISOString() });
  });

  it("measures the pace: finishes per hour over the day, the median first claim to done, and when the ready queue drains", async () => {
    const org = await seedOrg(env.services, { prefix: "PCE" });
    const bob = org.agents.bob.ctx;
    for (const title of ["a", "b", "c", "d", "e", "f", "g"]) await create(org.agents.alice.ctx, title);
    const finish = async (identifier: string, minutes: number) => {
      const claim = await claimIssue(bob, { identifier });
      clock.advance(minutes * MINUTE);
      await saveIssue(bob, { identifier, claimToken: claim.claimToken, status: "done" });
    };
    await finish("PCE-1", 8);
    await finish("PCE-2", 2);
    clock.advance(120 * MINUTE);
    await finish("PCE-3", 5);
    // Three finishes are too few to plan by.
    expect((await fleetSnapshot(await dashAs(org, "alice"))).forecast).toMatchObject({
      finished: 3,
      perHour: null,
      reason: "not enough history for a pace yet: 3 finished over 135 min (a pace needs 5 over 10 min)",
    });
    await finish("PCE-4", 5);
    await finish("PCE-5", 5);
    const { charts, counts, forecast } = await fleetSnapshot(await dashAs(org, "alice"));
    expect(charts.buckets).toHaveLength(24);
    expect(charts.totals).toMatchObject({ finished: 5, medianClaimToDoneMs: 5 * MINUTE });
    expect(counts.ready).toBe(2);
    // 5 finishes since the first of their claims 145 min ago: 2.07 an hour (shown as 2.1), so the two ready issues in 58 min.
    expect(forecast).toMatchObject({ window: "24h", finished: 5, perHour: 2.1, ready: 2, open: 2, criticalChain: [], reason: null });
    expect(forecast.readyHours).toBeCloseTo(2 / (5 / (145 / 60)));
    // A day later the day is empty, the week still counts them, and there is no pace to forecast from.
    clock.advance(25 * 60 * MINUTE);
    const later = await fleetSnapshot(await dashAs(org, "alice"));
    expect(later.charts.totals).toMatchObject({ finished: 0, medianClaimToDoneMs: null });
    expect((await fleetSnapshot(await dashAs(org, "alice"), "week")).charts.totals).toMatchObject({ finished: 5 });
    expect(later.forecast).toMatchObject({ perHour: null, readyHours: null, openEta: null, reason: "no finish in the last 24h to measure a pace from" });
  });

  it("records a handoff to another runtime and a reclaim of an expired lease", async () => {
    const org = await seedOrg(env.services, { prefix: "HND" });
    await create(org.agents.alice.ctx, "Migrate the schema");
    const first = await claimIssue(org.agents.bob.ctx, { identifier: "HND-1" });
    await releaseIssue(org.agents.bob.ctx, { identifier: "HND-1", claimToken: first.claimToken, note: "half done" });
    await claimIssue(org.agents.carol.ctx, { identifier: "HND-1" });
    let fleet = await fleetSnapshot(await dashAs(org, "alice"));
    expect(fleet.claims[0]).toMatchObject({ identifier: "HND-1", runtime: "cursor", handedOffFrom: "codex" });
    expect(fleet.moves.slice(0, 3).map((m) => [m.kind, m.runtime, m.fromRuntime])).toEqual([
      ["handoff", "cursor", "codex"],
      ["released", "codex", null],
      ["claimed", "codex", null],
    ]);

    clock.advance(601_000);
    fleet = await fleetSnapshot(await dashAs(org, "alice"));
    expect(fleet.claims[0]).toMatchObject({ identifier: "HND-1", expired: true });
    expect(fleet.counts.held).toBe(0);
    await reclaimSweep(env.services);
    fleet = await fleetSnapshot(await dashAs(org, "alice"));
    expect(fleet.claims).toEqual([]);
    expect(fleet.moves[0]).toMatchObject({ kind: "reclaimed", identifier: "HND-1", fromRuntime: "cursor" });
  });

  it("counts ready, blocked, in review and breaching work, and only the viewer's org", async () => {
    const org = await seedOrg(env.services, { prefix: "CNT" });
    const other = await seedOrg(env.services, { prefix: "CNT" });
    const a = org.agents.alice.ctx;
    const head = await create(a, "head");
    await create(a, "gated", { blockedBy: [head.identifier], noDependency: undefined });
    await create(a, "flagged", { status: "blocked" });
    await create(a, "due soon", { dueAt: clock.now().getTime() + 10 * MINUTE });
    const review = await create(a, "to review");
    const held = await claimIssue(org.agents.bob.ctx, { identifier: review.identifier });
    await saveIssue(org.agents.bob.ctx, {
      identifier: review.identifier,
      status: "review",
      assignee: org.agents.carol.userId,
      claimToken: held.claimToken,
      handoff: "reviewed copy on its branch",
    });
    await claimIssue(other.agents.bob.ctx, { identifier: (await create(other.agents.alice.ctx, "elsewhere")).identifier });
    clock.advance(9.5 * MINUTE);
    const fleet = await fleetSnapshot(await dashAs(org, "alice"));
    expect(fleet.counts).toMatchObject({ ready: 3, blocked: 2, review: 1, breaching: 1, held: 0 });
    expect(fleet.claims).toEqual([]);
  });
});

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

describe("issue drill-down", () => {
  it("shows the activity log with principal, runtime and key, checkpoints, comments and a sanitized body", async () => {
    const org = await seedOrg(env.services, { prefix: "DRL" });
    await create(org.agents.alice.ctx, "Harden the login", { body: "Do **this**.\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))" });
    const claim = await claimIssue(org.agents.bob.ctx, { identifier: "DRL-1" });
    await heartbeat(org.agents.bob.ctx, { identifier: "DRL-1", claimToken: claim.claimToken });
    await checkpoint(org.agents.bob.ctx, { identifier: "DRL-1", claimToken: claim.claimToken, done: "audit", gotchas: "cookies" });
    const dash = await dashAs(org, "alice");
    await saveComment(dash, { issue: "DRL-1", body: "Looks good so far" });
    const detail = await issueDetail(dash, { identifier: "drl-1" });
    expect(detail.bodyHtml).toContain("<strong>this</strong>");
    // Raw HTML shows as text and a script URL stays text, never a link.
    expect(detail.bodyHtml).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(detail.bodyHtml).not.toMatch(/<script|href="javascript:/);
    expect(detail.activity.map((e) => [e.kind, e.runtime, e.keyPrefix])).toEqual([
      ["commented", "dash", null],
      ["checkpoint", "codex", org.agents.bob.key.slice(0, 12)],
      ["heartbeat", "codex", org.agents.bob.key.slice(0, 12)],
      ["claimed", "codex", org.agents.bob.key.slice(0, 12)],
      ["created", "claude-code", org.agents.alice.key.slice(0, 12)],
    ]);
    expect(detail.activity[1]!.who).toMatch(/^bob-.*@example\.com$/);
    expect(detail.activity[1]).toMatchObject({ label: "checkpoint", text: "saved by codex, fence 1 · done: audit · gotchas: cookies" });
    expect(detail.activity[3]!.text).toMatch(/^claimed by codex, lease to \d\d:\d\d UTC, fence 1$/);
    expect(detail.checkpoints).toMatchObject([{ runtime: "codex", done: "audit", gotchas: "cookies" }]);
    expect(detail.comments).toMatchObject([{ body: "Looks good so far", bodyHtml: "<p>Looks good so far</p>\n", runtime: "dash" }]);
    expect(detail.comments[0]!.author).toMatch(/^alice-/);
  });

  it("refuses another org's issue as NOT_FOUND", async () => {
    const org = await seedOrg(env.services, { prefix: "TEN" });
    const other = await seedOrg(env.services, { prefix: "TEN" });
    await create(other.agents.alice.ctx, "secret");
    await expect(issueDetail(await dashAs(org, "alice"), { identifier: "TEN-1" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(queuePage(await dashAs(org, "alice"), {}).then((p) => p.total)).resolves.toBe(0);
  });

  it("draws blockers above, gated work below and marks the critical chain", async () => {
    const org = await seedOrg(env.services, { prefix: "GRA" });
    const a = org.agents.alice.ctx;
    const root = await create(a, "root"); // GRA-1
    const side = await create(a, "side"); // GRA-2
    const mid = await create(a, "mid", { blockedBy: [root.identifier], noDependency: undefined }); // GRA-3
    const center = await create(a, "center", { blockedBy: [mid.identifier, side.identifier], noDependency: undefined }); // GRA-4
    await create(a, "urgent goal", { priority: 1, blockedBy: [center.identifier], noDependency: undefined }); // GRA-5
    await create(a, "low goal", { priority: 4, blockedBy: [center.identifier], noDependency: undefined }); // GRA-6
    const detail = await issueDetail(await dashAs(org, "alice"), { identifier: center.identifier });
    expect(detail.graph.nodes.map((n) => n.identifier).sort()).toEqual(["GRA-1", "GRA-2", "GRA-3", "GRA-4", "GRA-5", "GRA-6"]);
    // Laid out top to bottom: each blocker above what it gates.
    const y = (id: string) => detail.graph.layout.nodes[id]!.y;
    for (const e of detail.graph.edges) expect(y(e.from), `${e.from} above ${e.to}`).toBeLessThan(y(e.to));
    expect(y("GRA-1")).toBeLessThan(y("GRA-3"));
    expect(detail.graph.nodes.filter((n) => n.critical).map((n) => n.identifier).sort()).toEqual(["GRA-1", "GRA-3", "GRA-4", "GRA-5"]);
    expect(detail.graph.edges.filter((e) => e.critical).map((e) => `${e.from}>${e.to}`).sort()).toEqual([
      "GRA-1>GRA-3",
      "GRA-3>GRA-4",
      "GRA-4>GRA-5",
    ]);
    expect(detail.why.inheritedFrom).toEqual({ identifier: "GRA-5", raisedByDeadline: null });
  });
});

describe("forceRelease", () => {
  it("lets an owner or admin take back a stuck claim, never a member", async () => {
    const org = await seedOrg(env.services, { prefix: "FRC" });
    await create(org.agents.alice.ctx, "stuck");
    const claim = await claimIssue(org.agents.bob.ctx, { identifier: "FRC-1" });
    await expect(forceRelease(await dashAs(org, "carol"), { identifier: "FRC-1", reason: "stuck" })).rejects.toMatchObject({
      code: "FORBIDDEN",
    });
    await expect(forceRelease(await dashAs(org, "alice"), { identifier: "FRC-1", reason: "" })).rejects.toThrow();
    const released = await forceRelease(await dashAs(org, "alice"), { identifier: "FRC-1", reason: "agent hung on a prompt" });
    expect(released).toMatchObject({ identifier: "FRC-1", released: true });
    await expect(heartbeat(org.agents.bob.ctx, { identifier: "FRC-1", claimToken: claim.claimToken })).rejects.toMatchObject({
      code: "STALE_CLAIM",
    });
    await expect(forceRelease(await dashAs(org, "alice"), { identifier: "FRC-1", reason: "again" })).rejects.toMatchObject({
      code: "CONFLICT",
    });
    const detail = await issueDetail(await dashAs(org, "alice"), { identifier: "FRC-1" });
    expect(detail.activity[0]).toMatchObject({ kind: "force_released", runtime: "dash" });
    expect(detail.activity[0]).toMatchObject({ label: "taken back", text: "claim of codex taken back by dash, fence 1: agent hung on a prompt" });
    const fleet = await fleetSnapshot(await dashAs(org, "alice"));
    expect(fleet.moves[0]).toMatchObject({ kind: "force_released", fromRuntime: "codex", runtime: "dash" });
    const again = await claimIssue(org.agents.carol.ctx, { identifier: "FRC-1" });
    expect(again.fence).toBe(2);
  });
});
