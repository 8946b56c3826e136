import { describe, expect, it } from "vitest";
import { saveIssue } from "../issues/index.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { nextIssue, queueForecast, queueStatus } from "./index.ts";

const clock = new TestClock();
const env = useTestServices({ clock });
const MINUTE = 60_000;
const TAKES = 10 * MINUTE;

describe("the drain forecast", () => {
  it("forecasts a scripted fleet's finish within 25%, bounded by the critical chain", async () => {
    const org = await seedOrg(env.services, { prefix: "FCS" });
    const author = org.agents.alice.ctx;
    // A container holding a chain of 8 urgent issues, each blocked by the one before, and 7 independent issues.
    const epic = await saveIssue(author, { title: "Chain", work: false, changeType: "feat", noDependency: "tracking" });
    const chain: string[] = [];
    for (let k = 0; k < 8; k++) {
      const made = await saveIssue(author, {
        title: `chain ${k + 1}`,
        work: true,
        changeType: "feat",
        priority: "urgent",
        parent: epic.identifier,
        ...(k === 0 ? { noDependency: "first link" } : { blockedBy: [chain[k - 1]!] }),
      });
      chain.push(made.identifier);
    }
    for (let k = 0; k < 7; k++) await saveIssue(author, { title: `alone ${k + 1}`, work: true, changeType: "feat", noDependency: "standalone" });

    const before = await queueForecast(author);
    expect(before).toMatchObject({ open: 15, ready: 8, perHour: null, openEta: null, criticalChain: chain });
    expect(before.reason).toMatch(/no finish/);

    // Three agents in lockstep: each takes the next issue, the work takes 10 minutes, each finishes.
    const fleet = [org.agents.alice.ctx, org.agents.bob.ctx, org.agents.carol.ctx];
    const tick = async () => {
      const claims = [];
      for (const ctx of fleet) {
        const reply = await nextIssue(ctx);
        if ("claimToken" in reply) claims.push({ ctx, identifier: reply.identifier, claimToken: reply.claimToken });
      }
      if (claims.length === 0) return false;
      clock.advance(TAKES);
      for (const c of claims) await saveIssue(c.ctx, { identifier: c.identifier, claimToken: c.claimToken, status: "done" });
      return true;
    };

    const start = clock.now().getTime();
    await tick();
    // 3 finished in 10 minutes: too little history to plan by.
    const early = await queueForecast(author);
    expect(early).toMatchObject({ finished: 3, perHour: null, openEta: null });
    expect(early.reason).toBe("not enough history for a pace yet: 3 finished over 10 min (a pace needs 5 over 10 min)");
    await tick(); // warm-up: 6 finished in 20 minutes
    const forecast = (await queueStatus(author)).forecast;
    expect(forecast).toMatchObject({ window: "24h", finished: 6, perHour: 18, medianClaimToDoneMs: TAKES, open: 9, reason: null });
    expect(forecast.criticalChain).toEqual(chain.slice(2));
    // At 18 an hour the 9 open issues would take 30 minutes; the 6-link chain, worked one link at a time, takes an hour.
    expect(forecast.openHours).toBeCloseTo(1);
    expect(forecast.containers).toEqual([{ identifier: epic.identifier, open: 6, hours: forecast.openHours, eta: forecast.openEta }]);

    const forecastAt = clock.now().getTime();
    while (await tick());
    const actualHours = (clock.now().getTime() - forecastAt) / 3_600_000;
    expect(clock.now().getTime() - start).toBe(8 * TAKES);
    expect(Math.abs(forecast.openHours! - actualHours) / actualHours).toBeLessThanOrEqual(0.25);
    expect(Date.parse(forecast.openEta!)).toBe(clock.now().getTime());

    const drained = await queueForecast(author);
    expect(drained).toMatchObject({ open: 0, ready: 0, openHours: 0, criticalChain: [], containers: [] });
  });
});
