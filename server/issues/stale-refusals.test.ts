import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { fleetHours } from "../../db/schema/index.ts";
import { testDriver } from "../testing/db.ts";
import { callOk } from "../mcp/testing.ts";
import { useDashApp } from "../testing/dash.ts";

/**
 * The Fleet page's count of stale writes refused (decision 027) is kept by the refusal, not by a
 * door: a fenced write a person sends through the Dash over real HTTP against the built app, refused
 * STALE_CLAIM because an agent holds the issue, is counted as one over /mcp is.
 */
describe.skipIf(testDriver !== "postgres")("stale refusals are counted whatever the door (needs TEST_DATABASE_URL)", () => {
  const app = useDashApp();

  it("a finish refused through a Dash action is counted in the project's hour and shown on the Fleet page", async () => {
    const person = await app.person("stale", "STL");
    const counted = async () => {
      const [row] = await app.db
        .select({ n: sql<number>`coalesce(sum(${fleetHours.staleRefused}), 0)::int` })
        .from(fleetHours)
        .where(eq(fleetHours.orgId, person.orgId));
      return Number(row?.n ?? 0);
    };
    await callOk(person.agent, "save_issue", { title: "Held by the agent", work: true, changeType: "feat", noDependency: "alone" });
    await callOk(person.agent, "claim_issue", { identifier: "STL-1" });
    expect(await counted()).toBe(0);

    // The person marks it done on its page while the agent holds it: a fenced write without the lease's token.
    const refused = await fetch(`${app.url}/dash/issues/STL-1`, {
      method: "POST",
      headers: { cookie: person.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ intent: "edit", status: "done", "was.status": "doing" }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("STL-1 is held by");
    expect(await counted()).toBe(1);
    const [row] = await app.db.select({ projectId: fleetHours.projectId }).from(fleetHours).where(eq(fleetHours.orgId, person.orgId));
    expect(row?.projectId).not.toBeNull();
    const fleet = await (await fetch(`${app.url}/dash`, { headers: { cookie: person.cookie } })).text();
    expect(fleet).toContain("1 stale write refused in the last 24 h");

    // The same refusal over /mcp is counted once more, not twice: the door records nothing of its own.
    const mcpRefused = (await person.agent.callTool({ name: "save_issue", arguments: { identifier: "STL-1", status: "done", claimToken: "rct_not-this-claims" } })) as {
      structuredContent?: { error?: { code: string } };
    };
    expect(mcpRefused.structuredContent?.error?.code).toBe("STALE_CLAIM");
    expect(await counted()).toBe(2);
  });
});
