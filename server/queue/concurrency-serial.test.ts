import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestClock, testDriver } from "../testing/db.ts";
import { DomainError } from "../errors.ts";
import { addRelation, saveIssue } from "../issues/index.ts";
import { loadDispatchSnapshot, rankingDrift } from "../testing/dispatch-snapshot.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { nextIssue, releaseIssue } from "./index.ts";
import { lanes, readyInOrder } from "./reference-ranking.ts";
import { fileRandomDag, MINUTE, noQuarantine, onPostgres, openTwoPools, random, type TwoPools } from "./testing/two-pools.ts";

/**
 * Serial dispatch (the concurrency suite for dispatch, part three; testing/two-pools.ts says what
 * the parts share): one agent at a time, while priorities, deadlines, edges and the clock move
 * between claims, each claim must be the top of a from-scratch recomputation of the order.
 */

const SERIAL_ISSUES = onPostgres ? 250 : 120;

let two: TwoPools;
beforeAll(async () => {
  two = await openTwoPools();
});
afterAll(() => two?.close());

describe("serial dispatch against a from-scratch recomputation", () => {
  it(`hands out exactly the top of the order at every step (${SERIAL_ISSUES} issues, moving priorities, deadlines, edges and time)`, async () => {
    const seed = Date.now() % 1_000_000;
    const rng = random(seed);
    const clock = new TestClock();
    const [services] = two.pools(clock, { LEASE_TTL_SECONDS: "600", CLAIM_CAP_DEFAULT: "50" });
    const org = await seedOrg(services, { prefix: "SER" });
    await noQuarantine(services, org.projectId);
    const second = await org.agentFor("alice", "opencode");
    const agents = [
      { ctx: org.agents.alice.ctx, userId: org.agents.alice.userId },
      { ctx: second.ctx, userId: org.agents.alice.userId },
      { ctx: org.agents.bob.ctx, userId: org.agents.bob.userId },
      { ctx: org.agents.carol.ctx, userId: org.agents.carol.userId },
    ];
    const identifiers = await fileRandomDag([org.agents.alice.ctx], rng, SERIAL_ISSUES, {
      dueWithin: 120 * MINUTE,
      assignees: [org.agents.alice.userId, org.agents.bob.userId, org.agents.carol.userId],
    });
    const steps = { claims: 0, empty: 0, mutations: 0, abandoned: 0 };
    const started = Date.now();

    for (let step = 0; step < SERIAL_ISSUES * 3; step++) {
      const now = clock.now().getTime();
      const before = await loadDispatchSnapshot(services.db, org.orgId, now);
      const open = identifiers.filter((id) => before.byIdentifier.get(id)!.status !== "done");
      if (open.length === 0) break;

      // Move the ground under dispatch between claims: priority, deadline, a new edge, time.
      const target = open[rng.int(open.length)]!;
      const roll = rng.next();
      if (roll < 0.1) await saveIssue(org.agents.bob.ctx, { identifier: target, priority: rng.int(5) });
      else if (roll < 0.16) {
        await saveIssue(org.agents.bob.ctx, { identifier: target, dueAt: rng.chance(0.2) ? null : now + rng.int(90 * MINUTE) });
      } else if (roll < 0.22) {
        const blocker = open[rng.int(open.length)]!;
        if (blocker !== target) {
          await addRelation(org.agents.carol.ctx, { sourceId: blocker, targetId: target, type: "blocks" }).catch((error: unknown) => {
            if (!(error instanceof DomainError && error.code === "CYCLE")) throw error;
          });
        }
      }
      if (roll < 0.22) steps.mutations++;
      if (rng.chance(0.3)) clock.advance(rng.int(4 * MINUTE));

      const at = clock.now().getTime();
      const facts = await loadDispatchSnapshot(services.db, org.orgId, at);
      const agent = agents[rng.int(agents.length)]!;
      const lane = lanes(agent.userId);
      const mine = readyInOrder(facts.issues, facts.blocks, at, lane.mine);
      const reply = await nextIssue(agent.ctx, {});
      let claimed = "claimToken" in reply ? reply : null;
      if (!("claimToken" in reply)) {
        expect(mine, `step ${step}: engine found nothing in the lane`).toEqual([]);
        const others = readyInOrder(facts.issues, facts.blocks, at, lane.others);
        expect({ ready: reply.ready, otherLanes: reply.otherLanes }).toEqual({ ready: 0, otherLanes: others.length });
        steps.empty++;
        if (others.length === 0) {
          clock.advance(5 * MINUTE); // only held (abandoned) work is left: let leases run out
          continue;
        }
        const all = readyInOrder(facts.issues, facts.blocks, at, lane.all);
        const wide = await nextIssue(agent.ctx, { allLanes: true });
        expect("claimToken" in wide ? wide.identifier : null, `step ${step}: allLanes`).toBe(all[0]?.identifier ?? null);
        claimed = "claimToken" in wide ? wide : null;
      } else {
        expect(reply.identifier, `step ${step} (seed ${seed}): top of the order`).toBe(mine[0]?.identifier);
      }
      expect(rankingDrift(await loadDispatchSnapshot(services.db, org.orgId, at), at), `step ${step}: stored ranking`).toEqual([]);
      if (!claimed) continue;
      steps.claims++;
      const token = { identifier: claimed.identifier, claimToken: claimed.claimToken };
      const fate = rng.next();
      if (fate < 0.8) await saveIssue(agent.ctx, { ...token, status: "done" });
      else if (fate < 0.9) await releaseIssue(agent.ctx, { ...token, note: "handing back" });
      else steps.abandoned++; // left to expire: dispatchable again once the lease runs out
    }
    const final = await loadDispatchSnapshot(services.db, org.orgId, clock.now().getTime());
    expect(final.issues.filter((i) => i.status !== "done").map((i) => i.identifier)).toEqual([]);
    console.info(
      `serial (seed ${seed}, ${testDriver}): ${SERIAL_ISSUES} issues, ${steps.claims} claims checked against a recomputation, ` +
        `${steps.empty} empty lanes, ${steps.mutations} re-rankings, ${steps.abandoned} abandoned leases, ${Date.now() - started} ms`,
    );
  });
});
