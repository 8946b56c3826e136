import { beforeAll, describe, expect, test } from "vitest";
import { callOk, connectClient, inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { addCredit } from "./credit.ts";
import { billingOnConfig, setBalance } from "./testing.ts";

const env = useTestServices({ config: billingOnConfig() });
const connect = (key: string) => connectClient(`${inProcessOrigin}/mcp`, key, { fetch: inProcessFetch(env.services) });

describe("the low-balance warning", () => {
  let org: SeededOrg;
  beforeAll(async () => {
    org = await seedOrg(env.services, { name: "Low Org" });
  });

  test("metered replies carry `billing` under 10% of the last credit added; reads and a healthy balance do not", async () => {
    const alice = await connect(org.agents.alice.key);
    // The last credit added: a $20 grant (given credit spends first, so the drains below take from it).
    await setBalance(env.services.db, org.orgId, 0);
    await addCredit(env.services.db, { orgId: org.orgId, kind: "given", microCredits: 20_000_000, source: "test", ref: "grant-20", at: env.services.clock.now() });
    // Under 10% of it ($2.00) once this write's 5,000 are paid: $1.80 left.
    await setBalance(env.services.db, org.orgId, 1_805_000);
    const low = await callOk(alice, "save_issue", { title: "Written while low", work: true, changeType: "feat", noDependency: "independent" });
    expect(low.billing).toMatch(/^Credit is low: \$1\.80 left of the last \$20\.00 added\. Tell your human: an owner can buy more at https?:\/\/\S+\/dash\/settings\/billing\.$/);
    expect((await callOk(alice, "get_issue", { identifier: low.identifier })).billing).toBeUndefined();
    const claim = await callOk(alice, "claim_issue", { identifier: low.identifier });
    expect((await callOk(alice, "heartbeat", { identifier: low.identifier, claimToken: claim.claimToken })).billing).toMatch(/^Credit is low/);

    // Topped up to $3.00, above the line ($2.00): no warning.
    await setBalance(env.services.db, org.orgId, 3_000_000);
    expect((await callOk(alice, "save_comment", { issue: low.identifier, body: "healthy again" })).billing).toBeUndefined();
  });
});
