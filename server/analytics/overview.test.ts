import { and, eq, gte, sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { billingCharges, members, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { saveIssue } from "../issues/index.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { humanCtx } from "../orgs/access.ts";
import { createProject } from "../orgs/index.ts";
import { claimIssue, heartbeat } from "../queue/index.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { billingOnConfig } from "../usage/testing.ts";
import { analyticsIssues } from "./issues.ts";
import { analyticsOverview, type FlowRow } from "./overview.ts";

const clock = new TestClock();
const env = useTestServices({ clock, config: billingOnConfig() });
const HOUR = 3_600_000;
const DAY = 86_400_000;

const row = (rows: FlowRow[], by: FlowRow["by"], key: string | null = null) => rows.find((r) => r.by === by && r.key === key);

it("counts a seeded org's creates, finishes and cancels over the period, with cycle and lead time by changeType and runtime, its cost, and the issues behind them; another org's never", async () => {
  const t0 = new Date("2026-09-01T08:00:00Z").getTime();
  const at = (ms: number) => clock.set(new Date(t0 + ms));
  at(0);
  const org = await seedOrg(env.services, { prefix: "ANA" });
  const ops = await createProject(env.services.db, { orgId: org.orgId, name: "Ops", prefix: "ANO" });
  const other = await seedOrg(env.services, { prefix: "ANX" });
  const dashOf = async (who: "alice" | "bob" | "carol", orgId = org.orgId, userId = org.agents[who].userId) =>
    (await humanCtx(env.services, { orgId, userId, runtime: "dash" })).ctx;
  const alice = await dashOf("alice");
  const file = async (agent: Ctx, title: string, changeType?: "fix" | "feat" | "docs", extra: Record<string, unknown> = {}) =>
    (await saveIssue(agent, { title, work: true, noDependency: "a test", ...(changeType ? { changeType } : {}), ...extra })).identifier;
  const finish = async (agent: Ctx, identifier: string, claimAt: number, doneAt: number) => {
    at(claimAt);
    const claim = await claimIssue(agent, { identifier });
    // The lease lasts 30 minutes: renewed every 20 until the finish.
    for (let t = claimAt + 20 * 60_000; t < doneAt; t += 20 * 60_000) {
      at(t);
      await heartbeat(agent, { identifier, claimToken: claim.claimToken });
    }
    at(doneAt);
    await saveIssue(agent, { identifier, claimToken: claim.claimToken, status: "done", evidence: { commit: "abc1234" } });
  };

  const quick = await file(org.agents.alice.ctx, "a quick fix", "fix");
  const feature = await file(org.agents.alice.ctx, "a feature", "feat");
  const slow = await file(org.agents.alice.ctx, "a slow feature", "feat");
  const dropped = await file(alice, "dropped, filed by a person without a kind");
  await file(org.agents.alice.ctx, "docs still open", "docs");
  await file(alice, "another project's", undefined, { project: ops.prefix });
  await saveIssue(alice, { title: "a container, never counted", work: false, noDependency: "a test" });
  // Another org's finish, in the same hours.
  const foreign = await file(other.agents.alice.ctx, "another org's", "fix");
  await finish(other.agents.bob.ctx, foreign, HOUR, 2 * HOUR);

  await finish(org.agents.bob.ctx, quick, HOUR, 3 * HOUR); // codex: cycle 2 h, lead 3 h
  await finish(org.agents.carol.ctx, feature, 2 * HOUR, 6 * HOUR); // cursor: cycle 4 h, lead 6 h
  at(2 * HOUR);
  await saveIssue(alice, { identifier: dropped, status: "canceled", cancelReason: "not needed" });
  await finish(org.agents.bob.ctx, slow, DAY, DAY + HOUR); // codex: cycle 1 h, lead 25 h
  at(2 * DAY);

  const overview = await analyticsOverview(alice, {});
  expect(overview).toMatchObject({ days: 7, project: null, from: new Date(t0 - 5 * DAY).toISOString(), to: new Date(t0 + 2 * DAY).toISOString() });
  expect(overview.totals).toEqual({ created: 6, finished: 3, canceled: 1, reclaims: 0 });
  // Days counted back from now: t0 falls in the sixth.
  expect(overview.perDay).toEqual([0, 0, 0, 0, 0, 2, 1]);
  // Cycle 1, 2, 4 h; lead 3, 6, 25 h (percentile_cont: p90 interpolates).
  expect(row(overview.rows, "all")).toEqual({
    by: "all", key: null, created: 6, finished: 3, canceled: 1,
    cycleP50Ms: 2 * HOUR, cycleP90Ms: 3.6 * HOUR, leadP50Ms: 6 * HOUR, leadP90Ms: 21.2 * HOUR,
    reviewed: 0, reviewP50Ms: null, reviewP90Ms: null,
  });
  expect(row(overview.rows, "changeType", "fix")).toMatchObject({ created: 1, finished: 1, cycleP50Ms: 2 * HOUR, leadP50Ms: 3 * HOUR });
  expect(row(overview.rows, "changeType", "feat")).toMatchObject({ created: 2, finished: 2, cycleP50Ms: 2.5 * HOUR, leadP50Ms: 15.5 * HOUR });
  expect(row(overview.rows, "changeType", "none")).toMatchObject({ created: 2, finished: 0, canceled: 1, cycleP50Ms: null });
  expect(row(overview.rows, "changeType", "docs")).toMatchObject({ created: 1, finished: 0 });
  expect(row(overview.rows, "runtime", "codex")).toMatchObject({ created: 0, finished: 2, cycleP50Ms: 1.5 * HOUR });
  expect(row(overview.rows, "runtime", "cursor")).toMatchObject({ finished: 1, cycleP50Ms: 4 * HOUR });
  expect(row(overview.rows, "runtime", "claude-code")).toMatchObject({ created: 4 });
  expect(row(overview.rows, "runtime", "dash")).toMatchObject({ created: 2, canceled: 1 });
  expect(overview.falseDone).toEqual({ finishes: 3, falseDone: 0, rate: 0 });

  // Money: the ledger's charges over the period, all of them this org's; split by changeType and runtime.
  const [charged] = await env.services.db
    .select({ total: sql<string>`sum(${billingCharges.microCredits})` })
    .from(billingCharges)
    .where(and(eq(billingCharges.orgId, org.orgId), gte(billingCharges.createdAt, new Date(t0 - 5 * DAY))));
  expect(overview.cost!.microCredits).toBe(Number(charged!.total));
  expect(overview.cost!.perFinishedMicroCredits).toBe(Math.round(Number(charged!.total) / 3));
  const sum = (by: string) => overview.cost!.rows.filter((r) => r.by === by).reduce((a, r) => a + r.microCredits, 0);
  expect(sum("changeType")).toBe(Number(charged!.total));
  expect(sum("runtime")).toBe(Number(charged!.total));
  expect(overview.cost!.rows.find((r) => r.by === "changeType" && r.key === "feat")!.microCredits).toBeGreaterThan(0);

  // The issues behind the figures: slowest first, paged; filtered by changeType and runtime; titles decrypted.
  const first = await analyticsIssues(alice, { figure: "slowest", limit: 2 });
  expect(first.issues.map((i) => [i.identifier, i.leadMs, i.cycleMs])).toEqual([[slow, 25 * HOUR, HOUR], [feature, 6 * HOUR, 4 * HOUR]]);
  expect(first.issues[0]).toMatchObject({ title: "a slow feature", changeType: "feat", runtime: "codex", status: "done" });
  const second = await analyticsIssues(alice, { figure: "slowest", limit: 2, cursor: first.nextCursor });
  expect(second.issues.map((i) => i.identifier)).toEqual([quick]);
  expect(second.nextCursor).toBeUndefined();
  expect((await analyticsIssues(alice, { changeType: "feat" })).issues.map((i) => i.identifier)).toEqual([slow, feature]);
  expect((await analyticsIssues(alice, { runtime: "cursor" })).issues.map((i) => i.identifier)).toEqual([feature]);
  expect((await analyticsIssues(alice, { figure: "canceled" })).issues).toEqual([
    expect.objectContaining({ identifier: dropped, title: "dropped, filed by a person without a kind", changeType: null, cycleMs: null }),
  ]);
  expect((await analyticsIssues(alice, { figure: "created", changeType: "none" })).issues).toHaveLength(2);

  // One project; a member sees no money; a scoped member only their projects.
  expect((await analyticsOverview(alice, { project: "ano" })).totals).toEqual({ created: 1, finished: 0, canceled: 0, reclaims: 0 });
  const bob = await analyticsOverview(await dashOf("bob"), {});
  expect(bob.cost).toBeNull();
  expect(bob.totals.created).toBe(6);
  await env.services.db.update(members).set({ projectIds: [ops.id] }).where(and(eq(members.orgId, org.orgId), eq(members.userId, org.agents.carol.userId)));
  expect((await analyticsOverview(await dashOf("carol"), {})).totals).toEqual({ created: 1, finished: 0, canceled: 0, reclaims: 0 });
  // The other org counts its own only.
  const theirs = await analyticsOverview(await dashOf("alice", other.orgId, other.agents.alice.userId), {});
  expect(theirs.totals).toEqual({ created: 1, finished: 1, canceled: 0, reclaims: 0 });

  // A day-long period ending at t0 + 2 d holds only the slow finish's day; past 90 days nothing.
  expect((await analyticsOverview(alice, { days: 1 })).totals).toEqual({ created: 0, finished: 1, canceled: 0, reclaims: 0 });

  // Over /mcp with the SDK client, as agents: the owner's key reads the org with money; a member's key its project, no money.
  const mcp = (key: string) => connectClient(`${inProcessOrigin}/mcp`, key, { fetch: inProcessFetch(env.services) });
  const owner = await mcp(org.agents.alice.key);
  const overMcp = await callOk(owner, "analytics_overview", { days: 7 });
  expect(overMcp.totals).toEqual(overview.totals);
  expect(overMcp.cost.microCredits).toBe(overview.cost!.microCredits);
  expect(overMcp.definitions.cycle).toMatch(/first claim to done/);
  const paged = await callOk(owner, "analytics_issues", { figure: "slowest", limit: 1 });
  expect(paged.issues.map((i: { identifier: string }) => i.identifier)).toEqual([slow]);
  expect((await callOk(owner, "analytics_issues", { figure: "slowest", limit: 1, cursor: paged.nextCursor })).issues[0].identifier).toBe(feature);
  const member = await mcp(org.agents.bob.key);
  const theirKey = await callOk(member, "analytics_overview", {});
  expect(theirKey).toMatchObject({ project: "ANA", cost: null, totals: { created: 5, finished: 3, canceled: 1 } });
  expect((await callError(member, "analytics_overview", { project: "ANO" })).code).toBe("NOT_FOUND");
  // Bad input is refused with a code, never a 500.
  expect((await callError(owner, "analytics_overview", { days: 91 })).code).toBe("INVALID_INPUT");
  expect((await callError(owner, "analytics_overview", { days: 0 })).code).toBe("INVALID_INPUT");
  expect((await callError(owner, "analytics_issues", { changeType: "feature" })).code).toBe("INVALID_INPUT");
  expect((await callError(owner, "analytics_issues", { cursor: "nonsense" })).code).toBe("INVALID_INPUT");
  await owner.close();
  await member.close();
});

it("times reviews from their last entry into review to their acceptance, per issue and aggregated, and splits the cost by person; the same over /mcp", async () => {
  const t0 = new Date("2026-10-01T08:00:00Z").getTime();
  const at = (ms: number) => clock.set(new Date(t0 + ms));
  at(0);
  const org = await seedOrg(env.services, { prefix: "ANR" });
  const alice = org.agents.alice.ctx;
  const bob = org.agents.bob.ctx;
  const [bobUser] = await env.services.db.select({ email: user.email }).from(user).where(eq(user.id, org.agents.bob.userId));
  const [aliceUser] = await env.services.db.select({ email: user.email }).from(user).where(eq(user.id, org.agents.alice.userId));
  const file = async (title: string, changeType: "fix" | "feat") => (await saveIssue(alice, { title, work: true, noDependency: "a test", changeType })).identifier;
  // Alice's agent submits at `submitAt`; Bob's claims the review at `acceptAt` and accepts it ten minutes later.
  const review = async (identifier: string, submitAt: number, acceptAt: number) => {
    at(submitAt - 10 * 60_000);
    const mine = await claimIssue(alice, { identifier });
    at(submitAt);
    await saveIssue(alice, { identifier, claimToken: mine.claimToken, status: "review", assignee: bobUser!.email, handoff: `built on ${identifier.toLowerCase()}` });
    at(acceptAt);
    const theirs = await claimIssue(bob, { identifier });
    at(acceptAt + 10 * 60_000);
    await saveIssue(bob, { identifier, claimToken: theirs.claimToken, status: "done" });
  };
  const quick = await file("a quick review", "fix");
  const slow = await file("a slow review", "feat");
  const direct = await file("done without review", "feat");
  await review(quick, HOUR, 5 * HOUR - 10 * 60_000); // 4 h in review
  await review(slow, 2 * HOUR, 12 * HOUR - 10 * 60_000); // 10 h in review
  at(13 * HOUR);
  const claim = await claimIssue(alice, { identifier: direct });
  await saveIssue(alice, { identifier: direct, claimToken: claim.claimToken, status: "done" });
  at(DAY);

  const overview = await analyticsOverview(alice, {});
  // Two accepted reviews among three finishes: 4 h and 10 h (percentile_cont: p90 interpolates).
  expect(row(overview.rows, "all")).toMatchObject({ finished: 3, reviewed: 2, reviewP50Ms: 7 * HOUR, reviewP90Ms: 9.4 * HOUR });
  expect(row(overview.rows, "changeType", "fix")).toMatchObject({ finished: 1, reviewed: 1, reviewP50Ms: 4 * HOUR });
  expect(row(overview.rows, "changeType", "feat")).toMatchObject({ finished: 2, reviewed: 1, reviewP50Ms: 10 * HOUR });
  expect(overview.definitions.review).toMatch(/entry into review to its acceptance.*\(ms\)/);
  const longest = await analyticsIssues(alice, { figure: "review", limit: 1 });
  expect(longest.issues.map((i) => [i.identifier, i.reviewMs])).toEqual([[slow, 10 * HOUR]]);
  expect((await analyticsIssues(alice, { figure: "review", cursor: longest.nextCursor })).issues.map((i) => [i.identifier, i.reviewMs])).toEqual([[quick, 4 * HOUR]]);
  expect((await analyticsIssues(alice, { figure: "finished" })).issues.find((i) => i.identifier === direct)).toMatchObject({ reviewMs: null });

  // Cost per person: each person's keys' charges, summing to the whole.
  const person = (email: string) => overview.cost!.rows.find((r) => r.by === "person" && r.key === email)?.microCredits ?? 0;
  const [aliceCharged, bobCharged] = await Promise.all(
    [org.agents.alice.userId, org.agents.bob.userId].map(async (userId) => {
      const [r] = await env.services.db
        .select({ total: sql<string>`coalesce(sum(${billingCharges.microCredits}), 0)` })
        .from(billingCharges)
        .where(and(eq(billingCharges.orgId, org.orgId), eq(billingCharges.userId, userId)));
      return Number(r!.total);
    }),
  );
  expect(bobCharged).toBeGreaterThan(0);
  expect(person(aliceUser!.email)).toBe(aliceCharged);
  expect(person(bobUser!.email)).toBe(bobCharged);
  expect(overview.cost!.rows.filter((r) => r.by === "person").reduce((a, r) => a + r.microCredits, 0)).toBe(overview.cost!.microCredits);

  // Over /mcp with the SDK client: the owner's key reads the same numbers; a member's key no money.
  const owner = await connectClient(`${inProcessOrigin}/mcp`, org.agents.alice.key, { fetch: inProcessFetch(env.services) });
  const overMcp = await callOk(owner, "analytics_overview", {});
  expect(overMcp.rows[0]).toEqual(row(overview.rows, "all"));
  expect(overMcp.cost.rows).toEqual(overview.cost!.rows);
  expect((await callOk(owner, "analytics_issues", { figure: "review" })).issues.map((i: { reviewMs: number }) => i.reviewMs)).toEqual([10 * HOUR, 4 * HOUR]);
  const member = await connectClient(`${inProcessOrigin}/mcp`, org.agents.bob.key, { fetch: inProcessFetch(env.services) });
  const theirs = await callOk(member, "analytics_overview", {});
  expect(theirs.cost).toBeNull();
  expect(theirs.rows[0]).toMatchObject({ by: "all", reviewed: 2, reviewP50Ms: 7 * HOUR });
  await owner.close();
  await member.close();
});
