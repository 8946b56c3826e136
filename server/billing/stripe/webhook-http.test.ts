import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp, type AppProcess } from "../../testing/app-process.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../../testing/db.ts";
import { startFakeStripe, type FakeStripe } from "../../../test/fakes/stripe.ts";
import { cliPost, signUp } from "../../testing/world.ts";

/**
 * POST /webhooks/stripe through the built app's HTTP edge, against the fake Stripe API: Stripe
 * sends no Origin (and a browser forging one gets nowhere without the signature), a body over
 * the limit is refused before it is read, and on PostgreSQL one event delivered five times to
 * each of two app instances at once credits the org once.
 */
let fake: FakeStripe;
let database: TestDatabase | null = null;
const apps: AppProcess[] = [];
let owner: { token: string; orgId: string };

beforeAll(async () => {
  fake = await startFakeStripe();
  database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  const env = {
    ...(database ? { DATABASE_URL: database.url!, RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64") } : {}),
    RETASC_EMAIL_PASSWORD: "on",
    RETASC_BILLING: "on",
    STRIPE_SECRET_KEY: fake.secretKey,
    STRIPE_WEBHOOK_SECRET: fake.webhookSecret,
    STRIPE_API_URL: fake.url,
  };
  apps.push(await startApp(env));
  if (database) apps.push(await startApp(env));
  const person = await signUp(apps[0]!.url, "Olga");
  const org = await cliPost(apps[0]!.url, person.token, "orgs", { name: "Olga's org" });
  owner = { token: person.token, orgId: org.orgId };
  fake.webhookUrl = `${apps[0]!.url}/webhooks/stripe`;
});
afterAll(async () => {
  await Promise.all(apps.map((app) => app.stop()));
  await database?.close();
  await fake?.close();
});

async function summary() {
  const response = await fetch(`${apps[0]!.url}/api/cli/billing?orgId=${owner.orgId}`, { headers: { authorization: `Bearer ${owner.token}` } });
  expect(response.status).toBe(200);
  return (await response.json()).summary;
}
const buy = async (pack: number): Promise<string> => (await cliPost(apps[0]!.url, owner.token, "billing", { orgId: owner.orgId, action: "buy", pack })).checkoutSessionId;

describe("POST /webhooks/stripe over HTTP", () => {
  it("credits a paid session once, delivered five times to each instance at the same moment", async () => {
    const before = (await summary()).balance.boughtMicroCredits;
    const sessionId = await buy(25);
    const event = fake.complete(sessionId);
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) => fake.deliver(event, { url: `${apps[i % apps.length]!.url}/webhooks/stripe` }).then(async (r) => ({ status: r.status, body: await r.json() }))),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(replies.filter((r) => r.body.outcome === "credited")).toHaveLength(1);
    expect(replies.filter((r) => r.body.outcome === "already")).toHaveLength(9);
    const after = await summary();
    expect(after.balance.boughtMicroCredits - before).toBe(25_000_000);
    expect(after.purchases[0]).toMatchObject({ packUsd: 25, status: "paid", receiptUrl: `${fake.url}/receipts/${sessionId}` });
    expect(fake.problems).toEqual([]);
  });

  it("lets Stripe's delivery past the cross-site check, but only with a valid signature", async () => {
    const sessionId = await buy(10);
    const event = fake.complete(sessionId);
    const url = `${apps[0]!.url}/webhooks/stripe`;
    // What a page on another site could send: its Origin, a forged signature.
    const forged = await fetch(url, { method: "POST", headers: { origin: "https://evil.example", "content-type": "application/json", "stripe-signature": fake.sign(event.payload, "whsec_guess") }, body: event.payload });
    expect(forged.status).toBe(400);
    expect((await forged.json()).error.code).toBe("INVALID_INPUT");
    const unsigned = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: event.payload });
    expect(unsigned.status).toBe(400);
    const before = (await summary()).balance.boughtMicroCredits;
    expect((await summary()).balance.boughtMicroCredits).toBe(before);
    // Stripe itself: no Origin, a valid signature.
    const delivered = await fake.deliver(event, { url });
    expect(delivered.status).toBe(200);
    expect((await summary()).balance.boughtMicroCredits - before).toBe(10_000_000);
  });

  it("refuses a body over the limit before reading it, and answers other methods without a 5xx", async () => {
    const url = `${apps[0]!.url}/webhooks/stripe`;
    const big = JSON.stringify({ id: "evt_big", type: "checkout.session.completed", padding: "x".repeat(300 * 1024) });
    const tooLarge = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "stripe-signature": fake.sign(big) }, body: big });
    expect(tooLarge.status).toBe(413);
    const get = await fetch(url);
    expect(get.status).toBeLessThan(500);
    expect(get.status).toBeGreaterThanOrEqual(400);
    const ignored = fake.event("invoice.paid", { id: "in_test_1", object: "invoice" });
    const reply = await fake.deliver(ignored, { url });
    expect(reply.status).toBe(200);
    expect(await reply.json()).toMatchObject({ received: true, outcome: "ignored" });
  });
});
