import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, servicesFor, TestClock, type TestDatabase } from "../../db/testing.ts";
import type { Services } from "../context.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { authenticateAgentKey } from "./index.ts";
import { suspendMember } from "./members.ts";
import { createSetupCode, redeemSetupCode } from "./setup-codes.ts";
import { peopleOf, refusal } from "./testing.ts";

let tdb: TestDatabase;
let services: Services;
const clock = new TestClock();
beforeAll(async () => {
  tdb = await createTestDatabase();
  services = servicesFor(tdb.database, { clock });
});
afterAll(async () => {
  await tdb.close();
});

describe("setup codes", () => {
  it("trade once for a key of the person who issued them, in their org and project", async () => {
    const org = await seedOrg(services);
    const { as } = await peopleOf(services, org);
    const setup = await createSetupCode(as.bob, { projectId: org.projectId, runtime: "codex" });
    expect(setup.code).toMatch(/^rtscsetup_/);
    const bound = await redeemSetupCode(services, { code: setup.code });
    expect(bound).toMatchObject({ orgId: org.orgId, projectId: org.projectId, prefix: "RTSC", runtime: "codex", userId: org.agents.bob.userId });
    expect(await authenticateAgentKey(services.db, bound.key)).toMatchObject({ userId: org.agents.bob.userId, projectId: org.projectId });
    const again = await refusal(redeemSetupCode(services, { code: setup.code }));
    expect(again.code).toBe("CONFLICT");
    expect(again.message).toContain("already used");
  });

  it("expire after ten minutes", async () => {
    const org = await seedOrg(services);
    const { as } = await peopleOf(services, org);
    const setup = await createSetupCode(as.carol, { projectId: org.projectId });
    clock.advance(10 * 60_000 + 1);
    const error = await refusal(redeemSetupCode(services, { code: setup.code }));
    expect(error.message).toContain("expired");
  });

  it("stop working once their issuer is suspended, without being spent", async () => {
    const org = await seedOrg(services);
    const { as, memberIds } = await peopleOf(services, org);
    const setup = await createSetupCode(as.carol, { projectId: org.projectId });
    await suspendMember(as.alice, { memberId: memberIds.carol });
    expect((await refusal(redeemSetupCode(services, { code: setup.code }))).code).toBe("FORBIDDEN");
  });

  it("refuse unknown codes and projects of other orgs", async () => {
    const org = await seedOrg(services);
    const other = await seedOrg(services);
    const { as } = await peopleOf(services, org);
    expect((await refusal(redeemSetupCode(services, { code: "rtscsetup_" + "a".repeat(32) }))).code).toBe("NOT_FOUND");
    expect((await refusal(createSetupCode(as.bob, { projectId: other.projectId }))).code).toBe("NOT_FOUND");
  });
});
