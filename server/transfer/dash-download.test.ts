import { describe, expect, it } from "vitest";
import { callOk } from "../mcp/testing.ts";
import { useDashApp } from "../testing/dash.ts";
import { testDriver } from "../testing/db.ts";

/**
 * The Dash's Import & export page and its downloads over real HTTP against the built app.
 * (Seeding a signed-up person's org needs the database beside the running app: PostgreSQL.)
 */
describe.skipIf(testDriver !== "postgres")("the Dash's export downloads (needs TEST_DATABASE_URL)", () => {
  const app = useDashApp();

  it("offers JSON and CSV downloads of the viewer's org, as attachments, and refuses a bad format", async () => {
    const mine = await app.person("exporter", "EXP");
    const theirs = await app.person("other", "OTH");
    await callOk(mine.agent, "save_issue", { title: "Mine to export", work: true, changeType: "feat", noDependency: "alone" });
    await callOk(theirs.agent, "save_issue", { title: "Not mine", work: true, changeType: "feat", noDependency: "alone" });
    const get = (query: string, cookie = mine.cookie) => fetch(`${app.url}/dash/settings/transfer/export?${query}`, { headers: { cookie }, redirect: "manual" });

    const page = await (await fetch(`${app.url}/dash/settings/transfer`, { headers: { cookie: mine.cookie } })).text();
    expect(page).toContain('href="/dash/settings/transfer/export?format=json"');
    expect(page).toContain("Comments (CSV)");

    const json = await get("format=json");
    expect(json.status).toBe(200);
    expect(json.headers.get("content-disposition")).toMatch(/^attachment; filename="retasc-exporter-\d{4}-\d{2}-\d{2}\.json"$/);
    expect(json.headers.get("cache-control")).toBe("no-store");
    const doc = await json.json();
    expect(doc.issues.map((i: { title: string }) => i.title)).toEqual(["Mine to export"]);
    expect(doc.agents).toHaveLength(1);

    const csv = await get("format=csv&table=issues");
    expect(csv.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(await csv.text()).toContain("EXP-1,EXP,Mine to export,todo");

    const bad = await get("format=xml");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: "INVALID_INPUT" } });
    await Promise.all([mine.agent.close(), theirs.agent.close()]);
  });
});
