import { describe, expect, it } from "vitest";
import { TestClock } from "../testing/db.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { authenticateAgentKey } from "./key-auth.ts";
import { suspendMember } from "./members.ts";
import { createSetupCode, redeemSetupCode } from "./setup-codes.ts";
import { peopleOf, refusal } from "./testing.ts";

const clock = new TestClock();

const env = useTestServices({ clock });

describe("setup codes", () => {
  it("trade once for a key of the person who issued them, in their org and project", async () => {
    const org = await seedOrg(env.services);
    const { as } = await peopleOf(env.services, org);
    const setup = await createSetupCode(as.bob, { projectId: org.projectId, runtime: "codex" });
    expect(setup.code).toMatch(/^rtscsetup_/);
    const bound = await redeemSetupCode(env.services, { code: setup.code });
    expect(bound).toMatchObject({ orgId: org.orgId, projectId: org.projectId, prefix: "RTSC", runtime: "codex", userId: org.agents.bob.userId });
    expect(await authenticateAgentKey(env.services.db, bound.key)).toMatchObject({ userId: org.agents.bob.userId, projectId: org.projectId });
    const again = await refusal(redeemSetupCode(env.services, { code: setup.code }));
    expect(again.code).toBe("CONFLICT");
    expect(again.message).toContain("already used");
  });

  it("expire after ten minutes", async () => {
    const org = await seedOrg(env.services);
    const { as } = await peopleOf(env.services, org);
    const setup = await createSetupCode(as.carol, { projectId: org.projectId });
    clock.advance(10 * 60_000 + 1);
    const error = await refusal(redeemSetupCode(env.services, { code: setup.code }));
    expect(error.message).toContain("expired");
  });

  it("stop working once their issuer is suspended, without being spent", async () => {
    const org = await seedOrg(env.services);
    const { as, memberIds } = await peopleOf(env.services, org);
    const setup = await createSetupCode(as.carol, { projectId: org.projectId });
    await suspendMember(as.alice, { memberId: memberIds.carol });
    expect((await refusal(redeemSetupCode(env.services, { code: setup.code }))).code).toBe("FORBIDDEN");
  });

  it("refuse unknown codes and projects of other orgs", async () => {
    const org = await seedOrg(env.services);
    const other = await seedOrg(env.services);
    const { as } = await peopleOf(env.services, org);
    expect((await refusal(redeemSetupCode(env.services, { code: "rtscsetup_" + "a".repeat(32) }))).code).toBe("NOT_FOUND");
    expect((await refusal(createSetupCode(as.bob, { projectId: other.projectId }))).code).toBe("NOT_FOUND");
  });
});
