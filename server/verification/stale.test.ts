import { and, eq, sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { activity, issues } from "../../db/schema/index.ts";
import { fleetSnapshot } from "../dash/fleet.ts";
import { getIssue, saveIssue } from "../issues/index.ts";
import { composeMessage } from "../notify/message.ts";
import { recipientsOf } from "../notify/route.ts";
import { muteInput } from "../notify/bindings.ts";
import { humanCtx } from "../orgs/access.ts";
import { claimIssue } from "../queue/index.ts";
import { useTestServices } from "../testing/database.ts";
import { TestClock } from "../testing/db.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { verifyByHand } from "./attest.ts";
import { setVerification } from "./settings.ts";
import { staleVerificationSweep } from "./stale.ts";

/**
 * A finish CI leaves pending past its project's window reads stale (issue 35, decision 062): on
 * the issue, on the Fleet, and in one notice, however often the sweep runs.
 */
const clock = new TestClock();
const env = useTestServices({ clock });
const MINUTE = 60_000;

it("a finish pending past its project's window reads stale on the Fleet and is told of once, to its author and its finisher's human", async () => {
  const org = await seedOrg(env.services, { prefix: "STV" });
  const person = (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;
  await setVerification(person, { projectId: org.projectId, mode: "ci", windowMinutes: 30 });
  const { identifier } = await saveIssue(org.agents.alice.ctx, { title: "ship the parser", work: true, changeType: "feat", noDependency: "a test" });
  const { claimToken } = await claimIssue(org.agents.bob.ctx, { identifier });
  await saveIssue(org.agents.bob.ctx, { identifier, claimToken, status: "done", evidence: { commit: "abc1234" } });
  const [row] = await env.services.db.select({ id: issues.id }).from(issues).where(and(eq(issues.orgId, org.orgId), eq(issues.identifier, identifier)));
  const told = async () => {
    const [n] = await query<{ n: number }>(
      env.services.db,
      sql`select count(*)::int as n from outbox where job = 'notify.issue_event' and payload->>'kind' = 'verification_stale' and payload->>'issueId' = ${row!.id}`,
    );
    const entries = await env.services.db.select({ id: activity.id }).from(activity).where(and(eq(activity.issueId, row!.id), eq(activity.kind, "verification_stale")));
    return { notices: Number(n!.n), entries: entries.length };
  };

  // Within the window: pending, nothing marked or told.
  clock.advance(29 * MINUTE);
  await staleVerificationSweep(env.services);
  expect((await fleetSnapshot(person)).attention.stale).toEqual([]);
  expect(await told()).toEqual({ notices: 0, entries: 0 });

  // Past it: the issue, the Fleet and the sweep say stale, by the same rule.
  clock.advance(2 * MINUTE);
  expect((await getIssue(person, { identifier })).verification).toBe("stale");
  expect((await fleetSnapshot(person)).attention.stale).toEqual([
    expect.objectContaining({ identifier, title: "ship the parser", verification: "stale", windowMinutes: 30, evidence: { commit: "abc1234", branch: null, pr: null } }),
  ]);
  await staleVerificationSweep(env.services);
  expect(await told()).toEqual({ notices: 1, entries: 1 });
  // Once: the sweep again, now and an hour on, tells nobody again.
  await staleVerificationSweep(env.services);
  clock.advance(60 * MINUTE);
  await staleVerificationSweep(env.services);
  expect(await told()).toEqual({ notices: 1, entries: 1 });

  // Routed as verification_failed is (the author and the finisher's human), muted like every kind.
  const event = { orgId: org.orgId, issueId: row!.id, kind: "verification_stale" as const, actorId: null };
  expect((await recipientsOf(env.services.db, event)).sort()).toEqual([org.agents.alice.userId, org.agents.bob.userId].sort());
  expect(muteInput.parse({ kind: "verification_stale", muted: true })).toEqual({ kind: "verification_stale", muted: true });
  const message = await composeMessage(env.services, env.services.db, org.orgId, row!.id, "verification_stale");
  expect(message?.headline).toContain("within the project's window");
  expect(message?.details).toContainEqual({ label: "Evidence", text: "commit abc1234" });

  // A person settles it by hand: it is no longer stale anywhere.
  await verifyByHand(person, { identifier, verdict: "passed" });
  expect((await fleetSnapshot(person)).attention.stale).toEqual([]);
  await staleVerificationSweep(env.services);
  expect(await told()).toEqual({ notices: 1, entries: 1 });
});
