import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { testDriver } from "../testing/db.ts";
import { useDashApp } from "../testing/dash.ts";
import { addCredit } from "../usage/credit.ts";
import { addPeople } from "./testing.ts";

/**
 * The Dash's person pickers past 200 members, over real HTTP and without JavaScript: the
 * Connectors page's reviewer menus and the Billing page's person filter show a page of people
 * and say more match; the `q` of a GET form finds anyone, here the 250th; a card's reviewer and
 * the person filtered on stay in their menus wherever they sort.
 */
describe.skipIf(testDriver !== "postgres")("the Dash's person pickers in an org of 253 (needs TEST_DATABASE_URL)", () => {
  // Billing on for its page; nothing here calls Stripe (its API set to a closed local port all the same).
  const app = useDashApp({ RETASC_BILLING: "on", STRIPE_SECRET_KEY: "sk_test_unused", STRIPE_WEBHOOK_SECRET: "whsec_unused", STRIPE_API_URL: "http://127.0.0.1:9" });

  it("finds, sets and keeps the 250th member as a connector's reviewer, and filters the ledger by them", async () => {
    const owner = await app.person("pick", "PICK");
    await owner.agent.close();
    // Credit for the connector's plumbing charge (a seeded org gets no signup credit).
    await addCredit(app.db, { orgId: owner.orgId, kind: "given", microCredits: 10_000_000, source: "grant", ref: "pickers", at: new Date() });
    const crowd = await addPeople(app.db, owner.orgId, 250, `pick${crypto.randomBytes(3).toString("hex")}`);
    const last = crowd[249]!;
    const get = async (path: string) => {
      const response = await fetch(`${app.url}${path}`, { headers: { cookie: owner.cookie } });
      expect(response.status).toBe(200);
      return response.text();
    };
    const option = (value: string, label: string) => new RegExp(`<option value="${value}"[^>]*>${label.replace(/[.]/g, "\\.")}</option>`);

    const first = await get("/dash/settings/connectors");
    expect(first).toContain(`aria-label="Find a reviewer"`);
    expect(first).toContain("type part of a name or email to find anyone else");
    expect(first).not.toContain(last.email);
    const found = await get(`/dash/settings/connectors?q=${encodeURIComponent(last.email.toUpperCase())}`);
    expect(found).toMatch(option(last.email, `${last.name} &lt;${last.email}&gt;`));
    expect(found).toContain("1 person matches");

    const connected = await fetch(`${app.url}/dash/settings/connectors?q=${encodeURIComponent(last.email)}`, {
      method: "POST",
      headers: { cookie: owner.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ intent: "connect", provider: "github", repo: "acme/crowd", project: "PICK", pullRequests: "on", reviewer: last.email }),
    });
    expect(await connected.text()).toContain("Pull requests, and Pull request review comments");
    // The card's menu holds its reviewer by name on the first page, where the search does not reach them.
    const card = await get("/dash/settings/connectors");
    expect(card).toContain(`pull requests go to ${last.email} for review.`);
    expect(card).toMatch(option(last.email, `${last.name} &lt;${last.email}&gt;`));
    expect(card).not.toContain("(no longer a member)");

    // A search longer than a search takes narrows by its start: the page answers, never a 500 (the form fuzz found one, seed 1927343001).
    for (const page of ["/dash/settings/connectors", "/dash/settings/billing"]) {
      const searched = await get(`${page}?q=${"x".repeat(500)}`);
      expect(searched).toContain(`value="${"x".repeat(200)}"`);
    }
    const billing = await get("/dash/settings/billing");
    expect(billing).toContain("type part of a name or email to find anyone else");
    expect(billing).not.toContain(last.email);
    expect(await get(`/dash/settings/billing?q=${encodeURIComponent(last.name)}`)).toMatch(option(last.userId, last.email));
    const filtered = await get(`/dash/settings/billing?person=${last.userId}`);
    expect(filtered).toMatch(new RegExp(`<option value="${last.userId}" selected="">${last.email.replace(/[.]/g, "\\.")}</option>`));
    // The owner paid for the connector; the 250th was charged nothing.
    expect(filtered).not.toContain(`data-testid="ledger"`);
    expect(billing).toContain(`data-testid="ledger"`);
  });
});
