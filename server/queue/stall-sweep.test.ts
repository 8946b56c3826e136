import { and, asc, eq, sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { activity, issues } from "../../db/schema/index.ts";
import { activityWords } from "../dash/activity-text.ts";
import { fleetSnapshot } from "../dash/fleet.ts";
import { saveIssue } from "../issues/index.ts";
import { humanCtx } from "../orgs/access.ts";
import { TestClock, testConfig } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { setVerification } from "../verification/settings.ts";
import { checkClaim, checkpoint, claimIssue, heartbeat } from "./index.ts";
import { stallSweep } from "./stall-sweep.ts";

/**
 * The stall sweep (decision 062): a stalled claim is marked once per stall in its issue's
 * activity, and released only in a project that chose it, through the release path (counted
 * towards quarantine, recorded, the holder's next write refused STALE_CLAIM); a claim making
 * progress is left alone everywhere.
 */
const clock = new TestClock();
const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: "1200" }) });
const MINUTE = 60_000;

const personOf = async (org: SeededOrg) => (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;

async function claimed(org: SeededOrg, who: "bob" | "carol", title: string) {
  const agent = org.agents[who].ctx;
  const { identifier } = await saveIssue(agent, { title, work: true, changeType: "feat", noDependency: "a test" });
  const { claimToken } = await claimIssue(agent, { identifier });
  return { org, agent, identifier, claimToken };
}
type Claim = Awaited<ReturnType<typeof claimed>>;

async function entries(claim: Claim, kind: string) {
  const [row] = await env.services.db.select({ id: issues.id }).from(issues).where(and(eq(issues.orgId, claim.org.orgId), eq(issues.identifier, claim.identifier)));
  return env.services.db.select({ facts: activity.facts, runtime: activity.runtime }).from(activity).where(and(eq(activity.issueId, row!.id), eq(activity.kind, kind))).orderBy(asc(activity.id));
}

it("marks each stalled claim once per stall, and releases it only in a project that chose it, as a release: counted towards quarantine, the holder's next write refused", async () => {
  const opted = await seedOrg(env.services, { prefix: "RLS" });
  const plain = await seedOrg(env.services, { prefix: "KPT" });
  await setVerification(await personOf(opted), { projectId: opted.projectId, mode: "off", releaseStalled: true, quarantineAfter: 1 });
  const optedStalled = await claimed(opted, "bob", "spins in the opted project");
  const optedBusy = await claimed(opted, "carol", "checkpoints busily where release is opted");
  const plainStalled = await claimed(plain, "bob", "spins in the other project");
  const plainBusy = await claimed(plain, "carol", "works in the other project");
  const all = [optedStalled, optedBusy, plainStalled, plainBusy];

  // 45 minutes of heartbeats; the busy ones checkpoint at 30.
  for (const minutes of [15, 30, 45]) {
    clock.advance(15 * MINUTE);
    for (const c of all) await heartbeat(c.agent, { identifier: c.identifier, claimToken: c.claimToken });
    if (minutes === 30) for (const c of [optedBusy, plainBusy]) await checkpoint(c.agent, { identifier: c.identifier, claimToken: c.claimToken, done: "a step" });
  }
  await stallSweep(env.services);

  // Opted in and stalled: released by the release path, and (threshold 1) quarantined by it.
  const [released] = await entries(optedStalled, "released");
  expect(released).toMatchObject({ runtime: "retasc", facts: { stalled: true, holderRuntime: "codex", stallMinutes: 45 } });
  expect(await entries(optedStalled, "stalled")).toHaveLength(1);
  expect(await entries(optedStalled, "quarantined")).toHaveLength(1);
  const [optedRow] = await env.services.db.select().from(issues).where(and(eq(issues.orgId, opted.orgId), eq(issues.identifier, optedStalled.identifier)));
  expect(optedRow).toMatchObject({ leaseId: null, status: "blocked", abandonedClaims: 1, quarantineReason: "quarantined after 1 abandoned claims" });
  await expect(heartbeat(optedStalled.agent, { identifier: optedStalled.identifier, claimToken: optedStalled.claimToken })).rejects.toMatchObject({ code: "STALE_CLAIM" });
  await expect(checkpoint(optedStalled.agent, { identifier: optedStalled.identifier, claimToken: optedStalled.claimToken, done: "late" })).rejects.toMatchObject({ code: "STALE_CLAIM" });
  expect(activityWords({ kind: "released", runtime: "retasc", detail: released!.facts as Record<string, unknown> }, { attachments: new Map(), issues: null })).toEqual({
    label: "released, stalled",
    text: `claim of codex released by Retasc, fence 1: no checkpoint, comment or status write for 45 minutes, and the project releases stalled claims`,
  });
  // On the Fleet: the move, and the quarantine with its reason and how to release it.
  const optedFleet = await fleetSnapshot(await personOf(opted));
  expect(optedFleet.moves).toContainEqual(expect.objectContaining({ identifier: optedStalled.identifier, kind: "stall_released", fromRuntime: "codex" }));
  expect(optedFleet.attention.quarantined).toEqual([
    expect.objectContaining({
      identifier: optedStalled.identifier,
      reason: "quarantined after 1 abandoned claims",
      release: { page: `/dash/issues/${optedStalled.identifier}#quarantine`, command: `retasc issue unquarantine ${optedStalled.identifier}` },
    }),
  ]);

  // Opted in but making progress: left alone.
  expect(await checkClaim(optedBusy.agent, { identifier: optedBusy.identifier })).toMatchObject({ held: true, stalled: false });
  expect(await entries(optedBusy, "stalled")).toHaveLength(0);

  // Not opted in: marked (on the Fleet and once in the activity), never released.
  expect(await checkClaim(plainStalled.agent, { identifier: plainStalled.identifier })).toMatchObject({ held: true, stalled: true });
  expect(await entries(plainStalled, "stalled")).toEqual([
    expect.objectContaining({ facts: expect.objectContaining({ fence: 1, runtime: "codex", stallMinutes: 45 }) }),
  ]);
  expect(await entries(plainStalled, "released")).toHaveLength(0);
  expect(await entries(plainBusy, "stalled")).toHaveLength(0);
  const plainFleet = await fleetSnapshot(await personOf(plain));
  expect(plainFleet.claims.find((c) => c.identifier === plainStalled.identifier)).toMatchObject({ stalled: true });
  expect(plainFleet.attention.quarantined).toEqual([]);

  // Once per stall, not per poll: later sweeps add nothing while it stays stalled.
  clock.advance(10 * MINUTE);
  await heartbeat(plainStalled.agent, { identifier: plainStalled.identifier, claimToken: plainStalled.claimToken });
  await stallSweep(env.services);
  await stallSweep(env.services);
  expect(await entries(plainStalled, "stalled")).toHaveLength(1);
  // Progress, then a new stall: a second entry.
  await checkpoint(plainStalled.agent, { identifier: plainStalled.identifier, claimToken: plainStalled.claimToken, done: "moved on" });
  for (let i = 0; i < 3; i++) {
    clock.advance(15 * MINUTE);
    await heartbeat(plainStalled.agent, { identifier: plainStalled.identifier, claimToken: plainStalled.claimToken });
  }
  await stallSweep(env.services);
  expect(await entries(plainStalled, "stalled")).toHaveLength(2);
  expect(await entries(plainStalled, "released")).toHaveLength(0);
  const [notices] = await query<{ n: number }>(
    env.services.db,
    sql`select count(*)::int as n from outbox where org_id = ${plain.orgId} and payload->>'kind' = 'issue_quarantined'`,
  );
  expect(notices!.n).toBe(0);
});
