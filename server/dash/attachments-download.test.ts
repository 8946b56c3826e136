import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { testDriver } from "../testing/db.ts";
import { callOk } from "../mcp/testing.ts";
import { useDashApp } from "../testing/dash.ts";

/**
 * /dash/attachments/:id over real HTTP against the built app: what an agent attached over /mcp
 * downloads for a signed-in member of its org, images inline and everything else as a file,
 * and an attached HTML page never renders as one of ours. (Seeding a signed-up person's org
 * needs the database beside the running app: PostgreSQL.)
 */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

describe.skipIf(testDriver !== "postgres")("the Dash's attachment download (needs TEST_DATABASE_URL)", () => {
  const app = useDashApp();

  it("downloads files for the org's members: images inline, HTML as opaque bytes; another org's is NOT_FOUND", async () => {
    const mine = await app.person("mine", "DLM");
    const theirs = await app.person("theirs", "DLT");
    const { identifier } = await callOk(mine.agent, "save_issue", { title: "Broken page", work: true, changeType: "feat", noDependency: "alone" });
    const page = "<!doctype html><html><script>fetch('/api/cli/keys')</script></html>";
    const html = await callOk(mine.agent, "save_attachment_file", { issue: identifier, filename: "repro.html", contentBase64: Buffer.from(page).toString("base64") });
    const png = await callOk(mine.agent, "save_attachment_file", { issue: identifier, filename: "shot.png", contentBase64: PNG });

    const get = (id: string, cookie: string) => fetch(`${app.url}/dash/attachments/${id}`, { headers: { cookie }, redirect: "manual" });
    const served = await get(html.id, mine.cookie);
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("application/octet-stream");
    expect(served.headers.get("content-disposition")).toBe(`attachment; filename="repro.html"; filename*=UTF-8''repro.html`);
    expect(served.headers.get("x-content-type-options")).toBe("nosniff");
    expect(served.headers.get("content-security-policy")).toContain("sandbox");
    expect(await served.text()).toBe(page);

    const image = await get(png.id, mine.cookie);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(image.headers.get("content-disposition")).toMatch(/^inline; filename="shot.png"/);
    expect(Buffer.from(await image.arrayBuffer()).equals(Buffer.from(PNG, "base64"))).toBe(true);

    const foreign = await get(html.id, theirs.cookie);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ error: { code: "NOT_FOUND" } });
    expect((await get(crypto.randomUUID(), mine.cookie)).status).toBe(404);

    // The issue page lists both, with the download links.
    const issuePage = await (await fetch(`${app.url}/dash/issues/${identifier}`, { headers: { cookie: mine.cookie } })).text();
    expect(issuePage).toContain(`href="/dash/attachments/${html.id}"`);
    expect(issuePage).toContain(`src="/dash/attachments/${png.id}"`);
    await Promise.all([mine.agent.close(), theirs.agent.close()]);
  });

  it("sends a visitor who is not signed in to sign in", async () => {
    const response = await fetch(`${app.url}/dash/attachments/${crypto.randomUUID()}`, { redirect: "manual" });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toMatch(/^\/auth\/sign-in\?next=/);
  });
});
