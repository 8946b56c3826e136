import { describe, expect, it } from "vitest";
import { withPrincipal } from "../with-principal.ts";
import { humanPrincipal } from "../orgs/access.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { saveIssue } from "./index.ts";

const env = useTestServices();

describe("the create gates hold agents, not people (decision 059)", () => {
  it("a person's create on the Dash may leave changeType out; an agent's may not", async () => {
    const org = await seedOrg(env.services);
    const person = withPrincipal(env.services, humanPrincipal(org.orgId, org.agents.alice.userId, "dash"));
    const filed = await saveIssue(person, { title: "Tidy the footer", work: true, noDependency: "alone" });
    expect(filed.changeType).toBeNull();
    await expect(saveIssue(org.agents.alice.ctx, { title: "Tidy the header", work: true, noDependency: "alone" })).rejects.toMatchObject({
      code: "CHANGE_TYPE_REQUIRED",
    });
  });
});
