import { expect, it } from "vitest";
import { addRelation, getIssue, saveIssue } from "../issues/index.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { claimIssue, nextBatch, nextIssue, releaseIssue, slaSweep } from "./index.ts";

/**
 * A review's age floor (decision 073) as time passes: at least high on entry, urgent from 90% of a
 * day in review, above urgent past the day, inherited up the blocks chain like a deadline floor.
 */
const clock = new TestClock();
const env = useTestServices({ clock });
const HOUR = 3_600_000;
const URGENT_AT = 77_760_000; // 90% of a day, in ms

type Ctx = SeededOrg["agents"]["alice"]["ctx"];
const create = (ctx: Ctx, title: string, extra: Record<string, unknown> = {}) =>
  saveIssue(ctx, { title, work: true, changeType: "feat", noDependency: "standalone", ...extra });

/** Bob's agent builds `title` (priority low) and hands it to carol for review; returns it and when it entered. */
async function reviewed(org: SeededOrg, title: string) {
  const bob = org.agents.bob.ctx;
  const issue = await create(bob, title, { priority: 4 });
  const claim = await claimIssue(bob, { identifier: issue.identifier });
  await saveIssue(bob, { identifier: issue.identifier, claimToken: claim.claimToken, status: "review", assignee: org.agents.carol.userId, handoff: "built" });
  return { identifier: issue.identifier, since: clock.now().getTime() };
}

async function order(ctx: Ctx): Promise<string[]> {
  const peek = await nextBatch(ctx, { n: 10, allLanes: true });
  return "issues" in peek ? (peek.issues ?? []).map((i) => i.identifier) : [];
}
const levelOf = async (ctx: Ctx, identifier: string) => (await getIssue(ctx, { identifier })).effectiveLevel;

it("a low review ranks high on entry, urgent past 90% of a day, above a breached deadline past the day; sent back, it ranks by its priority", async () => {
  const org = await seedOrg(env.services, { prefix: "FLR" });
  const [alice, carol] = [org.agents.alice.ctx, org.agents.carol.ctx];
  const urgent = await create(alice, "new urgent", { priority: 1 });
  const high = await create(alice, "new high", { priority: 2 });
  const review = await reviewed(org, "finished low");

  expect(await levelOf(carol, review.identifier)).toBe(3);
  // At the same level (high) the review goes before new work; urgent new work still goes first.
  expect(await order(carol)).toEqual([urgent.identifier, review.identifier, high.identifier]);

  clock.set(new Date(review.since + URGENT_AT - 1));
  expect(await order(carol)).toEqual([urgent.identifier, review.identifier, high.identifier]);
  clock.set(new Date(review.since + URGENT_AT));
  expect(await order(carol)).toEqual([review.identifier, urgent.identifier, high.identifier]);
  expect(await levelOf(carol, review.identifier)).toBe(4);

  // A low todo due an hour before the review's day is up: past its deadline it is above urgent (5), above the review too.
  clock.set(new Date(review.since + 22 * HOUR));
  const late = await create(alice, "late low", { priority: 4, dueAt: review.since + 23 * HOUR });
  clock.set(new Date(review.since + 23.5 * HOUR));
  expect(await order(carol)).toEqual([late.identifier, review.identifier, urgent.identifier, high.identifier]);
  // Past a day the review is there too (5), and goes first: finished work before new.
  clock.set(new Date(review.since + 24 * HOUR));
  expect(await order(carol)).toEqual([review.identifier, late.identifier, urgent.identifier, high.identifier]);
  expect(await levelOf(carol, review.identifier)).toBe(5);

  const taken = await nextIssue(carol, {});
  expect("claimToken" in taken && taken.identifier).toBe(review.identifier);
  if (!("claimToken" in taken)) throw new Error("unreachable");
  await saveIssue(carol, { identifier: review.identifier, claimToken: taken.claimToken, status: "todo" });
  expect(await levelOf(carol, review.identifier)).toBe(1);
});

it("the floor inherits up the blocks chain: a todo gating a review rises with the review's age", async () => {
  const org = await seedOrg(env.services, { prefix: "FLB" });
  const alice = org.agents.alice.ctx;
  const review = await reviewed(org, "finished low");
  const prep = await create(alice, "prep low", { priority: 4 });
  await addRelation(alice, { sourceId: prep.identifier, targetId: review.identifier, type: "blocks" });
  expect(await levelOf(alice, prep.identifier)).toBe(3);

  clock.set(new Date(review.since + URGENT_AT));
  await slaSweep(env.services);
  expect(await levelOf(alice, prep.identifier)).toBe(4);
  clock.set(new Date(review.since + 24 * HOUR));
  await slaSweep(env.services);
  expect(await levelOf(alice, prep.identifier)).toBe(5);
  // The gate is what dispatch hands out: the review waits on it.
  expect(await order(alice)).toEqual([prep.identifier]);
});

it("a review quarantined after abandoned claims leaves review: its age floor goes with it at the next dispatch, and from what it gates", async () => {
  const org = await seedOrg(env.services, { prefix: "QRV" });
  const [alice, carol] = [org.agents.alice.ctx, org.agents.carol.ctx];
  const review = await reviewed(org, "finished low, abandoned in review");
  expect(await levelOf(carol, review.identifier)).toBe(3);
  // Carol's agent claims the review and lets it go without a checkpoint, three times (the project's default).
  for (let i = 0; i < 3; i++) {
    const claim = await claimIssue(carol, { identifier: review.identifier });
    await releaseIssue(carol, { identifier: review.identifier, claimToken: claim.claimToken });
  }
  expect(await getIssue(carol, { identifier: review.identifier })).toMatchObject({ status: "blocked" });
  // Something that must land before it inherits its level, as long as it holds one.
  const gate = await create(alice, "prepare the fixture data", { priority: 4 });
  await addRelation(alice, { sourceId: gate.identifier, targetId: review.identifier, type: "blocks" });
  // The next dispatch in its scope re-ranks it: blocked, no review clock, its priority's level (low, 1), and its blocker with it.
  await nextIssue(alice, {});
  expect(await levelOf(carol, review.identifier)).toBe(1);
  expect(await levelOf(carol, gate.identifier)).toBe(1);
});
