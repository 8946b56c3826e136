import { describe, expect, it } from "vitest";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { explainPick, fillQueue, holdHead } from "../testing/held-work.ts";
import { RETRY_AFTER_MAX_SECONDS } from "./dispatch.ts";
import { nextIssue } from "./index.ts";

/**
 * Picks and polls do not walk held work (decision 076): the pick reads claimable rows and lapsed
 * leases from indexes without the held ones, so its buffers stay those of an empty head however
 * much is held; an empty poll answers in the same statement and says when to poll again.
 */
const env = useTestServices();
const QUEUE = 3_000;
const HELD = 2_000;

describe("held work at the head of the queue", () => {
  it("is not visited by the pick: the same buffers with 2,000 held as with none", async () => {
    const org = await seedOrg(env.services);
    const { ctx } = org.agents.alice;
    await fillQueue(env.services, org.orgId, org.projectId, org.prefix, QUEUE);
    const later = new Date(ctx.clock.now().getTime() + 3_600_000);
    await holdHead(env.services, org.projectId, 0, later);
    // Each read after a warm-up, so plans are cached (ANALYZE invalidates them), as on a busy connection.
    const warm = async () => (await explainPick(env.services, ctx), explainPick(env.services, ctx));
    const none = await warm();
    await holdHead(env.services, org.projectId, HELD, later);
    const held = await warm();
    // Walking the held rows reads at least one index entry and heap page per few rows: hundreds of buffers.
    expect(held.buffers, `${held.buffers} buffers with ${HELD} held, ${none.buffers} with none`).toBeLessThanOrEqual(none.buffers + 20);

    // And the claim is the most urgent unheld issue, as before.
    const claim = await nextIssue(ctx, {});
    expect("identifier" in claim && claim.identifier).toBe(`${org.prefix}-${expectedFirstFree(HELD)}`);
  });

  it("an empty next_issue carries retryAfter: when the next lease lapses, at most the ceiling", async () => {
    const org = await seedOrg(env.services);
    const { ctx } = org.agents.bob;
    const empty = await nextIssue(ctx, {});
    expect(empty).toMatchObject({ claimed: false, ready: 0, retryAfter: RETRY_AFTER_MAX_SECONDS });
    await fillQueue(env.services, org.orgId, org.projectId, org.prefix, 50);
    await holdHead(env.services, org.projectId, 50, new Date(ctx.clock.now().getTime() + 10_000));
    const held = await nextIssue(ctx, {});
    expect(held).toMatchObject({ claimed: false, ready: 0, otherLanes: 0 });
    expect((held as { retryAfter: number }).retryAfter).toBeGreaterThanOrEqual(9);
    expect((held as { retryAfter: number }).retryAfter).toBeLessThanOrEqual(10);
  });
});

/** The number of the first issue fillQueue ranks after the `held` most urgent (by level, deadline, age, number). */
function expectedFirstFree(held: number): number {
  const rank = Array.from({ length: QUEUE }, (_, k) => k + 1).map((n) => {
    const prio = (n * 7) % 5;
    return { n, level: prio === 0 ? 0 : 5 - prio, due: n % 10 === 3 ? 30 + (n % 60) : Infinity, age: n };
  });
  // Older first: a larger n was created earlier (now - n seconds).
  rank.sort((a, b) => b.level - a.level || a.due - b.due || b.age - a.age || a.n - b.n);
  return rank[held]!.n;
}
