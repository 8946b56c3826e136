import { describe, expect, it } from "vitest";
import { claimIssue, nextBatch } from "../queue/index.ts";
import { saveIssue } from "../issues/index.ts";
import { TestClock, testConfig } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { metrics, renderMetrics } from "./index.ts";

const clock = new TestClock();
const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: "600" }) });

async function sample(name: string, labels: string): Promise<number> {
  const line = (await renderMetrics()).body.split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

describe("claimsIn", () => {
  // The app-level metrics test sees the sweep record an expiry; which of the sweep and a claim
  // gets there first is a race in a live app, so the claim's side is proven here, on real replies.
  it("counts an expiry a claim recorded itself as by=claim, from a single claim and from a batch", async () => {
    const org = await seedOrg(env.services, { prefix: "MET" });
    const a = org.agents.alice.ctx;
    const b = org.agents.bob.ctx;
    const x = await saveIssue(a, { title: "x", work: true, changeType: "feat", noDependency: "metrics test" });
    const before = {
      byClaim: await sample("retasc_lease_expiries_recorded_total", 'by="claim"'),
      reclaims: await sample("retasc_claims_total", 'tool="claim_issue",kind="reclaim"'),
    };
    metrics.claimsIn("claim_issue", await claimIssue(a, { identifier: x.identifier }));
    expect(await sample("retasc_lease_expiries_recorded_total", 'by="claim"')).toBe(before.byClaim);
    clock.advance(601_000);
    metrics.claimsIn("claim_issue", await claimIssue(b, { identifier: x.identifier }));
    expect(await sample("retasc_lease_expiries_recorded_total", 'by="claim"')).toBe(before.byClaim + 1);
    expect(await sample("retasc_claims_total", 'tool="claim_issue",kind="reclaim"')).toBe(before.reclaims + 1);
    clock.advance(601_000);
    metrics.claimsIn("next_batch", await nextBatch(a, { claim: true, n: 1 }));
    expect(await sample("retasc_lease_expiries_recorded_total", 'by="claim"')).toBe(before.byClaim + 2);
  });
});
