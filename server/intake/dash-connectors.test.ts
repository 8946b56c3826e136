import { sign } from "@octokit/webhooks-methods";
import { describe, expect, it } from "vitest";
import { testDriver } from "../testing/db.ts";
import { useDashApp } from "../testing/dash.ts";

/**
 * The Dash's Connectors page over real HTTP against the built app: the owner's Connect form
 * answers the webhook URL, the secret (once) and GitHub's steps; the card says Pending until
 * GitHub's signed ping, then Connected with the last delivery. The pull request stream is set
 * from the same form, with a reviewer.
 */
describe.skipIf(testDriver !== "postgres")("the Dash's Connectors page (needs TEST_DATABASE_URL)", () => {
  const app = useDashApp();

  it("connects a repository, shows the secret once, Pending until the ping, then Connected", async () => {
    const owner = await app.person("conn", "CONN");
    await owner.agent.close();
    const page = `${app.url}/dash/settings/connectors`;
    const form = new URLSearchParams({ intent: "connect", provider: "github", repo: "acme/web", project: "CONN", token: "ghp_dash_token" });
    const connected = await fetch(page, { method: "POST", headers: { cookie: owner.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" }, body: form });
    expect(connected.status).toBe(200);
    const html = await connected.text();
    const secret = /rwh_[A-Za-z0-9_-]{40,}/.exec(html)?.[0];
    expect(secret).toBeDefined();
    const connectorId = /\/webhooks\/github\/([0-9a-f-]{36})/.exec(html)?.[1];
    expect(connectorId).toBeDefined();
    expect(html).toContain("https://github.com/acme/web/settings/hooks/new");
    expect(html).not.toContain("ghp_dash_token");

    const read = async () => (await fetch(page, { headers: { cookie: owner.cookie } })).text();
    const before = await read();
    expect(before).toContain("Pending: waiting for the first delivery");
    expect(before).not.toContain(secret!);

    const body = JSON.stringify({ zen: "Design for failure.", hook_id: 2 });
    const ping = await fetch(`${app.url}/webhooks/github/${connectorId}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "ping", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": await sign(secret!, body) },
      body,
    });
    expect(ping.status).toBe(202);
    const after = await read();
    expect(after).toContain("Connected");
    expect(after).not.toContain("Last delivery: none yet");
  });

  it("turns the pull request stream on with a member as reviewer, refuses it without one, and picks another on the card", async () => {
    const owner = await app.person("prs", "PRSD");
    await owner.agent.close();
    const page = `${app.url}/dash/settings/connectors`;
    const post = (fields: Record<string, string>) =>
      fetch(page, { method: "POST", headers: { cookie: owner.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields) });
    const form = await (await fetch(page, { headers: { cookie: owner.cookie } })).text();
    // The reviewer list offers the org's active members by email.
    const reviewer = /<option value="(prs-[0-9a-f]+@example\.com)"/.exec(form)?.[1];
    expect(reviewer).toBeDefined();
    const refused = await post({ intent: "connect", provider: "github", repo: "acme/pulls", project: "PRSD", pullRequests: "on", reviewer: "" });
    expect(await refused.text()).toContain("needs a reviewer");
    const connected = await post({ intent: "connect", provider: "github", repo: "acme/pulls", project: "PRSD", pullRequests: "on", reviewer: reviewer! });
    const shown = await connected.text();
    expect(shown).toContain("Pull requests, and Pull request review comments");
    const connectorId = /\/webhooks\/github\/([0-9a-f-]{36})/.exec(shown)![1]!;
    const card = await (await fetch(page, { headers: { cookie: owner.cookie } })).text();
    expect(card).toContain(`Outsiders&#x27; pull requests go to ${reviewer} for review.`);
    // The card picks another reviewer (decision 032): a member's email, set and confirmed.
    expect(card).toContain(`aria-label="Reviewer for acme/pulls"`);
    const set = await post({ intent: "reviewer", connectorId, reviewer: reviewer! });
    expect(await set.text()).toContain("Reviewer set: the next review items go to their lane.");
    expect(await (await post({ intent: "reviewer", connectorId, reviewer: "nobody@example.com" })).text()).toContain("nobody@example.com");
  });
});
