import { describe, expect, it } from "vitest";
import type { Ctx } from "../context.ts";
import { checkpoint, claimIssue, heartbeat, reclaimSweep, releaseIssue } from "../queue/index.ts";
import { saveIssue } from "../issues/index.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { fleetSnapshot } from "./fleet.ts";
import { issueDetail } from "./issue.ts";
import { create, MINUTE, useDashServices } from "./testing.ts";

const { clock, env, dashAs } = useDashServices();

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
