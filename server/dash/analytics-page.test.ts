import { describe, expect, it } from "vitest";
import { callOk } from "../mcp/testing.ts";
import { testDriver } from "../testing/db.ts";
import { useDashApp } from "../testing/dash.ts";

/**
 * The Dash's Analytics page (decision 071) over real HTTP against the built app: the numbers
 * analytics_overview answers the same person's agent, another org's work never among them, a
 * range the server refuses said on the page (never a 500); and the issue edit form's kind of change.
 */
describe.skipIf(testDriver !== "postgres")("the Analytics page (needs TEST_DATABASE_URL)", () => {
  const app = useDashApp();
  const page = async (cookie: string, path: string) => {
    const response = await fetch(`${app.url}${path}`, { headers: { cookie } });
    return { status: response.status, html: await response.text() };
  };

  it("shows what analytics_overview counts, and only the org's own", async () => {
    const person = await app.person("analytics", "ANP");
    const other = await app.person("elsewhere", "ANQ");
    for (const [who, title] of [[person, "finished here"], [other, "finished elsewhere"], [other, "also elsewhere"]] as const) {
      const { identifier } = await callOk(who.agent, "save_issue", { title, work: true, changeType: "fix", noDependency: "alone" });
      const claim = await callOk(who.agent, "claim_issue", { identifier });
      await callOk(who.agent, "save_issue", { identifier, claimToken: claim.claimToken, status: "done", evidence: { commit: "abc1234" } });
    }
    await callOk(person.agent, "save_issue", { title: "still open", work: true, changeType: "docs", noDependency: "alone" });
    const overview = await callOk(person.agent, "analytics_overview", {});
    expect(overview.totals).toMatchObject({ created: 2, finished: 1, canceled: 0 });

    const { status, html } = await page(person.cookie, "/dash/analytics");
    expect(status).toBe(200);
    expect(html).toContain("<h1");
    const stat = (label: string) => html.match(new RegExp(`>(\\d+)</span><span[^>]*>${label}<`))?.[1];
    expect([stat("Created"), stat("Finished"), stat("Canceled")]).toEqual(["2", "1", "0"]);
    expect(html).toContain('data-testid="flow-changeType-fix"');
    expect(html).toContain("finished here");
    expect(html).not.toContain("finished elsewhere");
    expect(html).toContain('href="/dash/analytics"');

    const refused = await page(person.cookie, "/dash/analytics?days=400");
    expect(refused.status).toBe(200);
    expect(refused.html).toContain('role="alert"');
    expect(refused.html).toMatch(/days/);

    // The edit form sets the kind of change: only what the person changed is sent.
    const edited = await fetch(`${app.url}/dash/issues/ANP-2`, {
      method: "POST",
      headers: { cookie: person.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ intent: "edit", changeType: "chore", "was.changeType": "docs" }),
    });
    expect(edited.status).toBeLessThan(400);
    expect((await callOk(person.agent, "get_issue", { identifier: "ANP-2" })).changeType).toBe("chore");
    const select = (await page(person.cookie, "/dash/issues/ANP-2")).html.match(/<select id="edit-change-type"[\s\S]*?<\/select>/)![0];
    expect(select).toMatch(/<option value="chore" selected/);
    expect(select).not.toContain("not said");
  });
});
