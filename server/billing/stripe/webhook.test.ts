import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billingCredits, billingPurchases, billingStripeReversals, members } from "../../../db/schema/index.ts";
import { setOrgFrozen } from "../../orgs/freeze.ts";
import type { Services } from "../../context.ts";
import { createLogger } from "../../log.ts";
import { refusal, peopleOf } from "../../orgs/testing.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig, testDriver } from "../../testing/db.ts";
import { startFakeStripe, type FakeStripe } from "../../../test/fakes/stripe.ts";
import type { StripeEvent } from "../../../test/fakes/stripe-api.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import type { Ctx } from "../../context.ts";
import { buyCredit, listPurchases } from "../purchases.ts";
import { receiveStripeWebhook } from "./webhook.ts";
import { renderMetrics } from "../../metrics/index.ts";

/**
 * Stripe's webhook against the fake Stripe API and this driver's database: a paid session
 * credits its purchase exactly once however often and however concurrently it arrives, an
 * unpaid one credits nothing until its async payment succeeds, refunds and disputes take bought
 * credit back once (also when they come first), and a forged or missing signature writes nothing.
 */
let fake: FakeStripe;
const state = {} as { services: Services; org: SeededOrg; owner: Ctx; admin: Ctx; member: Ctx };
const db = useTestServices();
const log = createLogger("silent");

beforeAll(async () => {
  fake = await startFakeStripe();
  const config = testConfig({ RETASC_BILLING: "on", STRIPE_SECRET_KEY: fake.secretKey, STRIPE_WEBHOOK_SECRET: fake.webhookSecret, STRIPE_API_URL: fake.url });
  state.services = servicesFor(db.tdb.database, { config });
  state.org = await seedOrg(state.services);
  await state.services.db.update(members).set({ role: "admin" }).where(and(eq(members.orgId, state.org.orgId), eq(members.userId, state.org.agents.bob.userId)));
  const { as } = await peopleOf(state.services, state.org);
  state.owner = as.alice;
  state.admin = as.bob;
  state.member = as.carol;
});
afterAll(() => fake?.close());

const deliver = (event: StripeEvent, signature: string | null = fake.sign(event.payload), services = state.services) =>
  receiveStripeWebhook(services, log, Buffer.from(event.payload), signature);
const outcomeOf = (reply: Awaited<ReturnType<typeof deliver>>) => ("outcome" in reply.body ? reply.body.outcome : reply.body.error.code);

async function buy(pack: 10 | 25 | 50 | 100, ctx = state.owner) {
  const bought = await buyCredit(ctx, { pack }, { baseUrl: "http://localhost:3000" });
  return bought.checkoutSessionId;
}

/** The org's Stripe credit rows: the ledger of what Stripe added and took back. */
async function stripeCredits() {
  return state.services.db
    .select({ ref: billingCredits.ref, microCredits: billingCredits.microCredits, kind: billingCredits.kind })
    .from(billingCredits)
    .where(and(eq(billingCredits.orgId, state.org.orgId), eq(billingCredits.source, "stripe")));
}
const creditFor = async (ref: string) => (await stripeCredits()).filter((c) => c.ref === ref || c.ref.includes(ref));

describe("buying credit", () => {
  it("creates a Checkout session with the pack, the org as client_reference_id and the purchase in its metadata", async () => {
    const bought = await buyCredit(state.owner, { pack: 25 }, { baseUrl: "http://localhost:3000" });
    expect(bought.url).toBe(`${fake.url}/c/pay/${bought.checkoutSessionId}`);
    const sent = fake.requests.find((r) => r.path === "/v1/checkout/sessions" && (r.form.metadata as Record<string, string>).purchaseId === bought.purchaseId)!;
    expect(sent.form).toMatchObject({
      mode: "payment",
      client_reference_id: state.org.orgId,
      line_items: { "0": { quantity: "1", price_data: { currency: "usd", unit_amount: "2500" } } },
      metadata: { orgId: state.org.orgId, pack: "25", userId: state.org.agents.alice.userId },
      success_url: "http://localhost:3000/dash/settings/billing?checkout=paid&session_id={CHECKOUT_SESSION_ID}",
    });
    expect(sent.idempotencyKey).toBe(`retasc-purchase-${bought.purchaseId}`);
    expect(fake.problems).toEqual([]);
    // Not paid yet: no credit, and no purchase listed.
    expect(await creditFor(bought.checkoutSessionId)).toEqual([]);
    expect((await listPurchases(state.services.db, state.org.orgId)).map((p) => p.purchaseId)).not.toContain(bought.purchaseId);
  });

  it("is for owners, in the packs on sale, with billing on", async () => {
    expect((await buyCredit(state.owner, { pack: 10 }, { baseUrl: "http://localhost:3000" })).url).toContain("/c/pay/");
    for (const other of [state.admin, state.member]) {
      expect((await refusal(buyCredit(other, { pack: 10 }, { baseUrl: "http://localhost:3000" }))).code).toBe("FORBIDDEN");
    }
    await expect(buyCredit(state.owner, { pack: 30 }, { baseUrl: "http://localhost:3000" })).rejects.toThrow(/pack: must be one of 10, 25, 50, 100|must be one of 10, 25, 50, 100/);
    const off = { ...state.owner, config: testConfig() };
    expect((await refusal(buyCredit(off, { pack: 10 }, { baseUrl: "http://localhost:3000" }))).message).toContain("billing is off");
  });
});

describe("POST /webhooks/stripe, as a service", () => {
  /** retasc_webhook_deliveries_total{provider="stripe"} by result, as /metrics renders it. */
  async function stripeDeliveries(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const match of (await renderMetrics()).body.matchAll(/^retasc_webhook_deliveries_total\{(.*)\} (\d+)$/gm)) {
      if (!match[1]!.includes('provider="stripe"')) continue;
      counts[/result="(\w+)"/.exec(match[1]!)![1]!] = Number(match[2]);
    }
    return counts;
  }
  async function deliveriesSince(before: Record<string, number>): Promise<Record<string, number>> {
    const now = await stripeDeliveries();
    return Object.fromEntries(Object.entries(now).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => v !== 0));
  }

  it("credits a paid session exactly once when Stripe delivers it five times", async () => {
    const sessionId = await buy(25);
    const event = fake.complete(sessionId);
    const before = await stripeDeliveries();
    const outcomes = [];
    for (let i = 0; i < 5; i++) outcomes.push(outcomeOf(await deliver(event)));
    expect(outcomes).toEqual(["credited", "already", "already", "already", "already"]);
    expect(await deliveriesSince(before)).toEqual({ accepted: 1, duplicate: 4 });
    expect(await creditFor(sessionId)).toEqual([{ ref: sessionId, microCredits: 25_000_000, kind: "bought" }]);
    const purchase = (await listPurchases(state.services.db, state.org.orgId)).find((p) => p.status === "paid" && p.packUsd === 25)!;
    expect(purchase).toMatchObject({ microCredits: 25_000_000, reversedMicroCredits: 0 });
    // The receipt link is read from Stripe after the credit.
    expect(purchase.receiptUrl).toBe(`${fake.url}/receipts/${sessionId}`);
  });

  it("credits once when the same event arrives at two instances at the same moment", async () => {
    const other = testDriver === "postgres" ? { ...state.services, db: (await db.tdb.openAnother(5)).db } : state.services;
    const sessionId = await buy(50);
    const event = fake.complete(sessionId);
    const replies = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((i) => deliver(event, fake.sign(event.payload), i % 2 ? other : state.services)));
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(replies.map(outcomeOf).filter((o) => o === "credited")).toHaveLength(1);
    expect(await creditFor(sessionId)).toEqual([{ ref: sessionId, microCredits: 50_000_000, kind: "bought" }]);
  });

  it("refuses a forged or missing signature with 400 and writes nothing", async () => {
    const sessionId = await buy(10);
    const event = fake.complete(sessionId);
    const forged = await deliver(event, fake.sign(event.payload, "whsec_not_the_secret"));
    expect(forged.status).toBe(400);
    expect(forged.body).toMatchObject({ error: { code: "INVALID_INPUT", message: "the Stripe signature does not verify" } });
    // A valid signature over another body: the body was changed in transit.
    const tampered = await receiveStripeWebhook(state.services, log, Buffer.from(event.payload.replace('"paid"', '"paid" ')), fake.sign(event.payload));
    expect(tampered.status).toBe(400);
    const missing = await deliver(event, null);
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: { message: "the Stripe-Signature header is missing" } });
    expect((await deliver(event, "t=1,v1=00")).status).toBe(400);
    expect(await creditFor(sessionId)).toEqual([]);
    const [purchase] = await state.services.db.select().from(billingPurchases).where(eq(billingPurchases.checkoutSessionId, sessionId));
    expect(purchase).toMatchObject({ status: "open", paymentIntentId: null });
  });

  it("credits nothing for an unpaid session, then once when its async payment succeeds", async () => {
    const sessionId = await buy(100);
    expect(outcomeOf(await deliver(fake.complete(sessionId, "unpaid")))).toBe("unpaid");
    expect(await creditFor(sessionId)).toEqual([]);
    const succeeded = fake.asyncPaymentSucceeded(sessionId);
    expect(outcomeOf(await deliver(succeeded))).toBe("credited");
    expect(outcomeOf(await deliver(succeeded))).toBe("already");
    // Stripe also sends the completion again, now paid: still one credit.
    expect(outcomeOf(await deliver(fake.event("checkout.session.completed", { ...fake.sessions.get(sessionId)! })))).toBe("already");
    expect(await creditFor(sessionId)).toEqual([{ ref: sessionId, microCredits: 100_000_000, kind: "bought" }]);
  });

  it("ends an expired or failed session without credit", async () => {
    const expiredId = await buy(10);
    const expired = fake.event("checkout.session.expired", { ...fake.sessions.get(expiredId)!, status: "expired" });
    expect(outcomeOf(await deliver(expired))).toBe("closed");
    expect(outcomeOf(await deliver(expired))).toBe("already");
    const failedId = await buy(25);
    expect(outcomeOf(await deliver(fake.complete(failedId, "unpaid")))).toBe("unpaid");
    expect(outcomeOf(await deliver(fake.event("checkout.session.async_payment_failed", { ...fake.sessions.get(failedId)! })))).toBe("closed");
    for (const id of [expiredId, failedId]) expect(await creditFor(id)).toEqual([]);
    const statuses = await state.services.db.select({ id: billingPurchases.checkoutSessionId, status: billingPurchases.status }).from(billingPurchases);
    expect(statuses.filter((p) => p.id === expiredId || p.id === failedId).map((p) => p.status).sort()).toEqual(["expired", "failed"]);
    // A failed payment is listed among the purchases; an abandoned Checkout is not.
    const listed = await listPurchases(state.services.db, state.org.orgId);
    expect(listed.filter((p) => p.status === "failed")).toHaveLength(1);
    expect(listed.filter((p) => p.status === "expired")).toHaveLength(0);
  });

  it("applies a refund that arrives before the completion, once, when the completion comes", async () => {
    const sessionId = await buy(25);
    const completed = fake.complete(sessionId);
    const refunded = fake.refund(sessionId, 1000);
    expect(outcomeOf(await deliver(refunded))).toBe("pending");
    expect(outcomeOf(await deliver(refunded))).toBe("already");
    expect(await creditFor(sessionId)).toEqual([]);
    expect(outcomeOf(await deliver(completed))).toBe("credited");
    const charge = [...fake.charges.values()].find((c) => c.payment_intent === fake.sessions.get(sessionId)!.payment_intent)!;
    expect((await creditFor(sessionId)).concat(await creditFor(`refund:${charge.id}`)).sort((a, b) => b.microCredits - a.microCredits)).toEqual([
      { ref: sessionId, microCredits: 25_000_000, kind: "bought" },
      { ref: `refund:${charge.id}:1000`, microCredits: -10_000_000, kind: "bought" },
    ]);
    for (const event of [completed, refunded]) expect(outcomeOf(await deliver(event))).toBe("already");
    expect(await creditFor(`refund:${charge.id}`)).toHaveLength(1);    // Recorded before its purchase was known, with the org of the payment it reverses (its payment intent's metadata).
    const [reversal] = await state.services.db.select().from(billingStripeReversals).where(eq(billingStripeReversals.ref, `refund:${charge.id}:1000`));
    expect(reversal?.orgId).toBe(state.org.orgId);
  });

  it("writes nothing for a frozen org and answers 503, which Stripe delivers again; after the freeze the event counts (decision 110)", async () => {
    const sessionId = await buy(10);
    const completed = fake.complete(sessionId);
    const refunded = fake.refund(sessionId, 200);
    await setOrgFrozen(state.services.db, state.org.orgId, true);
    try {
      for (const event of [completed, refunded]) {
        const reply = await deliver(event);
        expect(reply.status).toBe(503);
        expect(outcomeOf(reply)).toBe("ORG_FROZEN");
      }
      expect(await creditFor(sessionId)).toEqual([]);
      const charge = [...fake.charges.values()].find((c) => c.payment_intent === fake.sessions.get(sessionId)!.payment_intent)!;
      expect(await state.services.db.select().from(billingStripeReversals).where(eq(billingStripeReversals.ref, `refund:${charge.id}:200`))).toEqual([]);
      const [purchase] = await state.services.db.select().from(billingPurchases).where(eq(billingPurchases.checkoutSessionId, sessionId));
      expect(purchase).toMatchObject({ status: "open", paymentIntentId: null });
    } finally {
      await setOrgFrozen(state.services.db, state.org.orgId, false);
    }
    expect(outcomeOf(await deliver(completed))).toBe("credited");
    expect(outcomeOf(await deliver(refunded))).toBe("reversed");
  });

  it("applies a refund delivered at the same moment as its completion, on another instance", async () => {
    const other = testDriver === "postgres" ? { ...state.services, db: (await db.tdb.openAnother(5)).db } : state.services;
    for (let round = 0; round < 6; round++) {
      const sessionId = await buy(10);
      const completed = fake.complete(sessionId);
      const refunded = fake.refund(sessionId, 400);
      const [first, second] = round % 2 ? [completed, refunded] : [refunded, completed];
      const replies = await Promise.all([deliver(first!), deliver(second!, undefined, other)]);
      expect(replies.map((r) => r.status)).toEqual([200, 200]);
      const [purchase] = await state.services.db.select().from(billingPurchases).where(eq(billingPurchases.checkoutSessionId, sessionId));
      expect(purchase, `round ${round}`).toMatchObject({ status: "paid", reversedMicroCredits: 4_000_000 });
    }
  });

  it("takes back each refund once, in whatever order Stripe sends them, never more than was bought", async () => {
    const sessionId = await buy(10);
    expect(outcomeOf(await deliver(fake.complete(sessionId)))).toBe("credited");
    const first = fake.refund(sessionId, 300); // amount_refunded 300
    const second = fake.refund(sessionId, 500); // amount_refunded 800
    expect(outcomeOf(await deliver(second))).toBe("reversed");
    expect(outcomeOf(await deliver(first))).toBe("reversed");
    const third = fake.refund(sessionId, 5000); // the rest: 1000 in all
    expect(outcomeOf(await deliver(third))).toBe("reversed");
    expect(outcomeOf(await deliver(third))).toBe("already");
    const charge = [...fake.charges.values()].find((c) => c.payment_intent === fake.sessions.get(sessionId)!.payment_intent)!;
    const taken = await creditFor(`refund:${charge.id}`);
    expect(taken.reduce((sum, c) => sum + c.microCredits, 0)).toBe(-10_000_000);
    const [purchase] = await state.services.db.select().from(billingPurchases).where(eq(billingPurchases.checkoutSessionId, sessionId));
    expect(purchase).toMatchObject({ status: "refunded", reversedMicroCredits: 10_000_000 });
    // A dispute of a fully refunded purchase takes nothing more.
    expect(outcomeOf(await deliver(fake.dispute(sessionId, 1000)))).toBe("reversed");
    expect((await stripeCredits()).filter((c) => c.ref.startsWith("dispute:")).length).toBe(0);
  });

  it("takes back a disputed purchase once", async () => {
    const sessionId = await buy(50);
    const disputeFirst = () => fake.dispute(sessionId, 5000);
    const completed = fake.complete(sessionId);
    const dispute = disputeFirst();
    expect(outcomeOf(await deliver(dispute))).toBe("pending");
    expect(outcomeOf(await deliver(completed))).toBe("credited");
    expect(outcomeOf(await deliver(dispute))).toBe("already");
    const taken = (await stripeCredits()).filter((c) => c.ref.startsWith("dispute:") && c.microCredits === -50_000_000);
    expect(taken).toHaveLength(1);
  });

  it("credits what the purchase bought, never what an event names: another amount or org is not credited", async () => {
    const sessionId = await buy(10);
    const completed = JSON.parse(fake.complete(sessionId).payload);
    const cheaper = fake.event("checkout.session.completed", { ...completed.data.object, amount_total: 100 });
    expect(outcomeOf(await deliver(cheaper))).toBe("mismatch");
    const other = await seedOrg(state.services, { prefix: "OTH" });
    const elsewhere = fake.event("checkout.session.completed", { ...completed.data.object, id: "cs_test_other", client_reference_id: other.orgId, metadata: { ...completed.data.object.metadata, orgId: other.orgId } });
    expect(outcomeOf(await deliver(elsewhere))).toBe("unknown");
    expect(await creditFor(sessionId)).toEqual([]);
    expect(await state.services.db.select().from(billingCredits).where(eq(billingCredits.orgId, other.orgId)).then((rows) => rows.filter((r) => r.source === "stripe"))).toEqual([]);
  });

  it("answers 200 to events it ignores, and 400, never 5xx, to a signed event it cannot read", async () => {
    const ignored = await deliver(fake.event("customer.created", { id: "cus_test_1", object: "customer" }));
    expect(ignored).toMatchObject({ status: 200, body: { received: true, outcome: "ignored" } });
    const unknownSession = await deliver(fake.event("checkout.session.completed", { id: "cs_test_elsewhere", payment_status: "paid", amount_total: 1000, currency: "usd" }));
    expect(unknownSession).toMatchObject({ status: 200, body: { outcome: "unknown" } });
    const broken = await deliver(fake.event("checkout.session.completed", { id: 42 }));
    expect(broken.status).toBe(400);
    const notJson = "not json at all";
    const garbage = await receiveStripeWebhook(state.services, log, Buffer.from(notJson), fake.sign(notJson));
    expect(garbage.status).toBe(400);
  });

  it("is not there with billing off", async () => {
    const event = fake.complete(await buy(10));
    const off = { ...state.services, config: testConfig() };
    expect((await deliver(event, fake.sign(event.payload), off)).status).toBe(404);
  });
});
