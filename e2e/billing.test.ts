import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startApp, type AppProcess } from "../server/testing/app-process.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../server/testing/db.ts";
import { startFakeStripe, type FakeStripe } from "../test/fakes/stripe.ts";
import { cliPost, signUp } from "../server/testing/world.ts";
import { launchBrowser, mcp, tool } from "./harness.ts";

/**
 * Billing end to end, with RETASC_BILLING=on and the fake Stripe API: an org that starts at
 * zero credit (once its agent's key is paid for) has its agent's writes refused with BILLING_INACTIVE; its owner buys $25 in the
 * Dash on the fake Checkout page, the signed webhook arrives and the Dash shows the new
 * balance; the agent works again, and when a refund takes the credit back to zero the agent's
 * writes are refused once more while its heartbeat still renews its claim.
 */
let fake: FakeStripe;
let app: AppProcess;
let database: TestDatabase | null = null;
let browser: Browser;
let page: Page;
let agent: Client;
let orgId: string;
let ownerToken: string;
let ownerCookie: string;
let inviteCode: string;

beforeAll(async () => {
  fake = await startFakeStripe();
  database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  [app, browser] = await Promise.all([
    startApp({
      ...(database ? { DATABASE_URL: database.url! } : {}),
      RETASC_EMAIL_PASSWORD: "on",
      RETASC_BILLING: "on",
      // The signup credit pays for minting the agent's key (plumbing, 1,000), and no more: the org is then at zero.
      // Inviting a member is free (decision 052).
      BILLING_SIGNUP_CREDIT: "1000",
      STRIPE_SECRET_KEY: fake.secretKey,
      STRIPE_WEBHOOK_SECRET: fake.webhookSecret,
      STRIPE_API_URL: fake.url,
      STRIPE_CHECKOUT_URL: fake.url,
    }),
    launchBrowser(),
  ]);
  fake.webhookUrl = `${app.url}/webhooks/stripe`;
  const owner = await signUp(app.url, "Greta");
  ownerToken = owner.token;
  ownerCookie = owner.cookie;
  orgId = (await cliPost(app.url, owner.token, "orgs", { name: "Greta's org" })).orgId;
  const project = await cliPost(app.url, owner.token, "projects", { orgId, name: "Engine", prefix: "ENG" });
  const key = await cliPost(app.url, owner.token, "keys", { orgId, action: "mint", projectId: project.projectId, runtime: "claude-code" });
  inviteCode = (await cliPost(app.url, owner.token, "members", { orgId, action: "invite" })).code;
  agent = await mcp(`${app.url}/mcp`, { authorization: `Bearer ${key.key}` });
  page = await signedInPage(owner.cookie);
});

/** A browser page signed in with the session cookie of a person signed up over HTTP. */
async function signedInPage(cookie: string, options: { javaScriptEnabled?: boolean } = {}): Promise<Page> {
  const context = await browser.newContext(options);
  await context.addCookies(
    cookie.split("; ").map((pair) => {
      const at = pair.indexOf("=");
      return { name: pair.slice(0, at), value: pair.slice(at + 1), url: app.url };
    }),
  );
  return context.newPage();
}
afterAll(async () => {
  await agent?.close().catch(() => {});
  await browser?.close();
  await app?.stop();
  await database?.close();
  await fake?.close();
});

test("an owner buys $25 on the Checkout page, the webhook arrives, and the Dash shows the balance", async () => {
  const refused = await tool(agent, "save_issue", { title: "Write the parser", work: true, changeType: "feat", noDependency: "first" });
  expect(refused.error).toMatchObject({ code: "BILLING_INACTIVE" });
  expect(refused.error.tellHuman).toContain(`localhost:${app.port}/dash/settings/billing`);

  await page.goto(`${app.url}/dash/settings/billing`);
  await expect.poll(() => page.getByTestId("balance-total").textContent()).toBe("$0.00");
  await page.getByRole("link", { name: "Billing" }).waitFor();
  await page.getByRole("button", { name: "Buy $25 of credit" }).click();

  // Stripe Checkout (the fake's page), then back to the Dash once the webhook has been delivered.
  await page.waitForURL((url) => url.href.startsWith(`${fake.url}/c/pay/`));
  expect(await page.getByTestId("amount").textContent()).toBe("$25.00");
  await page.getByRole("button", { name: "Pay $25.00" }).click();
  await page.waitForURL(new RegExp(`^${app.url}/dash/settings/billing\\?checkout=paid&session_id=cs_test_`));
  expect(fake.problems).toEqual([]);
  await expect.poll(() => page.getByTestId("balance-total").textContent()).toBe("$25.00");
  expect(await page.getByTestId("balance-bought").textContent()).toBe("$25.00");
  expect(await page.getByTestId("balance-given").textContent()).toBe("$0.00");
  const purchase = page.getByTestId("purchases").locator("tbody tr");
  await expect.poll(() => purchase.count()).toBe(1);
  expect(await purchase.textContent()).toContain("$25");
  expect(await purchase.getByRole("link", { name: "Receipt" }).getAttribute("href")).toMatch(new RegExp(`^${fake.url}/receipts/cs_test_`));
});

test("without JavaScript, Buy credit still takes the owner to the Checkout page (the page's CSP lets the form through to Stripe)", async () => {
  const plain = await signedInPage(ownerCookie, { javaScriptEnabled: false });
  try {
    await plain.goto(`${app.url}/dash/settings/billing`);
    await plain.getByRole("button", { name: "Buy $10 of credit" }).click();
    await plain.waitForURL((url) => url.href.startsWith(`${fake.url}/c/pay/`));
    expect(await plain.getByTestId("amount").textContent()).toBe("$10.00");
  } finally {
    await plain.context().close();
  }
});

test("with credit the agent works; at zero again its writes are refused and its heartbeat still succeeds", async () => {
  const created = await tool(agent, "save_issue", { title: "Write the parser", work: true, changeType: "feat", noDependency: "first" });
  expect(created.error).toBeUndefined();
  const claim = await tool(agent, "claim_issue", { identifier: created.identifier });
  expect(claim.claimToken).toMatch(/^rtclm_/);

  // Enough charges for a second ledger page (50 a page).
  for (let i = 0; i < 50; i++) expect((await tool(agent, "heartbeat", { identifier: created.identifier, claimToken: claim.claimToken })).error).toBeUndefined();
  await page.goto(`${app.url}/dash/settings/billing`);
  await expect.poll(() => page.getByTestId("ledger").locator("tbody tr").count()).toBe(50);
  await page.getByRole("link", { name: "Next page" }).click();
  await page.waitForURL(/cursor=/);
  // Page two: the oldest three of 53 charges (the key, the issue and its claim; then 50 heartbeats; the invite is free).
  await expect.poll(() => page.getByTestId("ledger").locator("tbody tr").count()).toBe(3);
  expect(await page.getByTestId("ledger").textContent()).toContain("save_issue");
  await page.getByRole("link", { name: "First page" }).waitFor();
  // A filter the ledger cannot take is said on the page, never a 500.
  const bad = await page.goto(`${app.url}/dash/settings/billing?runtime=${"x".repeat(100)}&day=2026-02-30`);
  expect(bad?.status()).toBe(200);
  await page.getByRole("alert").waitFor();

  // Stripe refunds the purchase: the refund takes back what is left, and the org is at zero.
  const [sessionId] = [...fake.sessions.keys()];
  const refunded = await fake.deliver(fake.refund(sessionId!, 2500));
  expect(refunded.status).toBe(200);
  await page.goto(`${app.url}/dash/settings/billing`);
  await expect.poll(() => page.getByTestId("balance-total").textContent()).toBe("$0.00");
  await expect.poll(() => page.getByTestId("purchases").locator("tbody tr").textContent()).toContain("refunded");
  // The ledger lists what the agent was charged, and filters by tool in the URL.
  await expect.poll(() => page.getByTestId("ledger").textContent()).toContain("heartbeat");
  await page.getByLabel("Tool").fill("claim_issue");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(/tool=claim_issue/);
  await expect.poll(() => page.getByTestId("ledger").locator("tbody tr").allTextContents()).toEqual([expect.stringContaining("claim_issue")]);
  expect(await page.getByTestId("ledger").textContent()).not.toContain("save_issue");

  const refused = await tool(agent, "save_comment", { issue: created.identifier, body: "still here" });
  expect(refused.error).toMatchObject({ code: "BILLING_INACTIVE" });
  const heartbeat = await tool(agent, "heartbeat", { identifier: created.identifier, claimToken: claim.claimToken });
  expect(heartbeat.error).toBeUndefined();
  expect(heartbeat.expiresAt ?? heartbeat.leaseExpiresAt).toBeTruthy();
});

test("a member sees their own usage only, and cannot buy credit or set the cap", async () => {
  const member = await signUp(app.url, "Milo");
  await cliPost(app.url, member.token, "join", { code: inviteCode });
  const sessions = fake.sessions.size;
  const memberPage = await signedInPage(member.cookie);
  await memberPage.goto(`${app.url}/dash/settings/billing`);
  await memberPage.getByRole("heading", { name: "Your usage" }).waitFor();
  expect(await memberPage.getByTestId("your-spend").textContent()).toBe("You spent $0.00 this month.");
  expect(await memberPage.getByTestId("balance-total").count()).toBe(0);
  expect(await memberPage.getByRole("button", { name: /Buy \$/ }).count()).toBe(0);
  expect(await memberPage.getByTestId("purchases").count()).toBe(0);
  // The owner's charges are not theirs to see.
  expect(await memberPage.getByTestId("ledger").count()).toBe(0);
  // A hand-made form post is refused by the service, whatever the page shows.
  const post = (fields: Record<string, string>) =>
    memberPage.evaluate(async (form) => (await fetch("/dash/settings/billing.data", { method: "POST", body: new URLSearchParams(form) })).text(), fields);
  expect(await post({ intent: "buy", pack: "25" })).toContain("buying credit needs the owner role");
  expect(await post({ intent: "cap", monthlyUsd: "5" })).toContain("setting the spend cap needs the owner role");
  expect(fake.sessions.size).toBe(sessions);
  await memberPage.context().close();
});
