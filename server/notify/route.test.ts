import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { issues, members } from "../../db/schema/index.ts";
import { saveIssue } from "../issues/index.ts";
import { createProject } from "../orgs/index.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { recipientsOf } from "./route.ts";

const env = useTestServices();

describe("who hears of an issue event", () => {
  it("never a member scoped away from the issue's project (decision 042), who would read its title in the message", async () => {
    const org = await seedOrg(env.services, { prefix: "NTF" });
    const ops = await createProject(env.services.db, { orgId: org.orgId, name: "Ops", prefix: "NTO" });
    await env.services.db
      .update(members)
      .set({ projectIds: [org.projectId] })
      .where(and(eq(members.orgId, org.orgId), eq(members.userId, org.agents.carol.userId)));
    const alice = org.agents.alice.ctx;
    const assigned = async (project: string) => {
      const issue = await saveIssue(alice, { title: "for carol", work: true, changeType: "feat", noDependency: "standalone", project, assignee: org.agents.carol.userId });
      const [row] = await env.services.db.select({ id: issues.id }).from(issues).where(and(eq(issues.orgId, org.orgId), eq(issues.identifier, issue.identifier)));
      return recipientsOf(env.services.db, { orgId: org.orgId, issueId: row!.id, kind: "assigned", actorId: org.agents.alice.userId });
    };
    expect(await assigned("NTF")).toEqual([org.agents.carol.userId]);
    expect(await assigned(ops.prefix)).toEqual([]);
  });
});
