import { expect, it } from "vitest";
import { saveComment } from "../issues/comments.ts";
import { saveIssue } from "../issues/index.ts";
import { TestClock, testConfig } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { humanCtx } from "../orgs/access.ts";
import { fleetSnapshot } from "../dash/fleet.ts";
import { checkClaim, checkpoint, claimIssue, heartbeat } from "./index.ts";

const clock = new TestClock();
const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: "1200" }) });
const MINUTE = 60_000;

it("a claim kept alive by heartbeats alone reads stalled after the project's window, in check_claim and on the Fleet; a checkpoint or a comment is progress", async () => {
  const org = await seedOrg(env.services, { prefix: "STA" });
  const agent = org.agents.bob.ctx;
  const { identifier } = await saveIssue(agent, { title: "spin", work: true, changeType: "feat", noDependency: "a test" });
  const { claimToken } = await claimIssue(agent, { identifier });
  expect(await checkClaim(agent, { identifier })).toMatchObject({ stalled: false });
  for (let minutes = 0; minutes < 45; minutes += 15) {
    clock.advance(15 * MINUTE);
    await heartbeat(agent, { identifier, claimToken });
  }
  const stalled = await checkClaim(agent, { identifier });
  expect(stalled).toMatchObject({ held: true, stalled: true });
  // The Fleet marks it too, with the same rule.
  const person = (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;
  expect((await fleetSnapshot(person)).claims.find((c) => c.identifier === identifier)).toMatchObject({ stalled: true, lastProgressAt: stalled.lastProgressAt });
  // Anyone asking sees it, not only the holder.
  expect(await checkClaim(org.agents.alice.ctx, { identifier })).toMatchObject({ stalled: true });
  await checkpoint(agent, { identifier, claimToken, done: "the parser" });
  expect(await checkClaim(agent, { identifier })).toMatchObject({ stalled: false, lastProgressAt: clock.now().toISOString() });
  expect((await fleetSnapshot(person)).claims.find((c) => c.identifier === identifier)).toMatchObject({ stalled: false });
  for (const minutes of [15, 15, 14]) {
    clock.advance(minutes * MINUTE);
    await heartbeat(agent, { identifier, claimToken });
  }
  await saveComment(agent, { issue: identifier, body: "still on it: the grammar is tricky" });
  clock.advance(2 * MINUTE);
  expect(await checkClaim(agent, { identifier })).toMatchObject({ stalled: false });
  // Unheld, nothing is said of stalling.
  expect(await checkClaim(agent, { identifier: (await saveIssue(agent, { title: "idle", work: true, changeType: "feat", noDependency: "a test" })).identifier })).not.toHaveProperty("stalled");
});
