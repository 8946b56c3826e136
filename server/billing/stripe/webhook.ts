import type Stripe from "stripe";
import { z } from "zod";
import type { Services } from "../../context.ts";
import { DomainError, inputErrorOf } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { stripeOf, stripeSdk } from "./client.ts";
import { metrics } from "../../metrics/index.ts";
import { closeSession, recordReversal, saveReceiptUrl, settleSession, type Settled } from "./settle.ts";

/** The largest webhook body read (Stripe's events are a few kilobytes; the edge's REQUEST_MAX_BODY_BYTES is larger). */
export const STRIPE_WEBHOOK_MAX_BYTES = 256 * 1024;

export interface WebhookReply {
  status: number;
  body: { received: true; type: string; outcome: Settled | "ignored" } | { error: { code: string; message: string; hint: string } };
}

const refusal = (status: number, code: string, message: string, hint: string): WebhookReply => ({ status, body: { error: { code, message, hint } } });

/** The fields of each event's object that are read; anything else in the payload is ignored. */
const idOf = z.union([z.string(), z.object({ id: z.string() })]).transform((v) => (typeof v === "string" ? v : v.id));
const sessionSchema = z.object({
  id: z.string().min(1),
  payment_status: z.string(),
  payment_intent: idOf.nullish(),
  amount_total: z.number().int().nullish(),
  currency: z.string().nullish(),
  client_reference_id: z.string().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
});
const chargeSchema = z.object({
  id: z.string().min(1),
  payment_intent: idOf.nullish(),
  amount_refunded: z.number().int().min(0),
  receipt_url: z.string().nullish(),
});
const disputeSchema = z.object({ id: z.string().min(1), payment_intent: idOf.nullish(), amount: z.number().int().min(0) });

/**
 * POST /webhooks/stripe: the raw body and its Stripe-Signature header. The signature is checked
 * with `stripe.webhooks.constructEvent` against STRIPE_WEBHOOK_SECRET (HMAC-SHA256 compared in
 * constant time, a timestamp within five minutes): without a valid one, 400 and nothing is read
 * or written. Then:
 * - `checkout.session.completed` / `checkout.session.async_payment_succeeded`: a paid session
 *   credits its purchase once; an unpaid one credits nothing.
 * - `checkout.session.async_payment_failed` / `checkout.session.expired`: the purchase ends.
 * - `charge.refunded` / `charge.dispute.created`: bought credit taken back once, also when the
 *   event comes before the session's completion.
 * - anything else: 200, ignored.
 * A signed event whose object lacks the fields read is a 400, never a 5xx; a database failure
 * is a 503, so Stripe delivers again.
 */
export async function receiveStripeWebhook(services: Services, log: Logger, body: Buffer, signature: string | null): Promise<WebhookReply> {
  const reply = await receiveSafely(services, log, body, signature);
  metrics.webhookDelivery("stripe", deliveryResult(reply));
  return reply;
}

function deliveryResult(reply: WebhookReply): "accepted" | "duplicate" | "refused" | "failed" {
  if (reply.status >= 500) return "failed";
  if (reply.status >= 400) return "refused";
  return "outcome" in reply.body && reply.body.outcome === "already" ? "duplicate" : "accepted";
}

async function receiveSafely(services: Services, log: Logger, body: Buffer, signature: string | null): Promise<WebhookReply> {
  try {
    return await receive(services, log, body, signature);
  } catch (error) {
    const input = inputErrorOf(error);
    if (input) return refusal(400, input.code, input.message, input.hint);
    // A frozen org (decision 110): 503, and Stripe delivers the event again after the move.
    if (error instanceof DomainError && error.code === "ORG_FROZEN") return refusal(503, error.code, error.message, error.hint);
    log.error({ err: error }, "Stripe webhook failed");
    return refusal(503, "UNAVAILABLE", "the event could not be recorded now", "Stripe delivers it again later.");
  }
}

async function receive(services: Services, log: Logger, body: Buffer, signature: string | null): Promise<WebhookReply> {
  const secret = services.config.STRIPE_WEBHOOK_SECRET;
  if (services.config.RETASC_BILLING !== "on" || !secret) {
    return refusal(404, "NOT_FOUND", "billing is off on this server", "An operator turns it on with RETASC_BILLING=on.");
  }
  if (!signature) return refusal(400, "INVALID_INPUT", "the Stripe-Signature header is missing", "Only Stripe's signed webhook deliveries are accepted here.");
  let event: Stripe.Event;
  try {
    event = (await stripeOf(services.config)).webhooks.constructEvent(body, signature, secret);
  } catch (error) {
    const errors = stripeSdk.loaded?.errors;
    if (errors && error instanceof errors.StripeSignatureVerificationError) {
      log.warn({ reason: error.message.slice(0, 120) }, "Stripe webhook refused: bad signature");
      return refusal(400, "INVALID_INPUT", "the Stripe signature does not verify", "Check STRIPE_WEBHOOK_SECRET is this endpoint's signing secret.");
    }
    // constructEvent parses the body only once the signature holds: a signed body that is no JSON.
    return refusal(400, "INVALID_INPUT", "the signed body is not a Stripe event", "Send the event exactly as Stripe signed it.");
  }
  const at = services.clock.now();
  const reply = (outcome: Settled | "ignored"): WebhookReply => {
    log.info({ eventId: event.id, type: event.type, outcome }, "Stripe webhook");
    return { status: 200, body: { received: true, type: event.type, outcome } };
  };
  const object = (event as { data?: { object?: unknown } }).data?.object;
  const malformed = () => refusal(400, "INVALID_INPUT", `the ${event.type} event's object lacks the fields it needs`, "Send the event exactly as Stripe signed it.");
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
    case "checkout.session.async_payment_failed":
    case "checkout.session.expired": {
      const parsed = sessionSchema.safeParse(object);
      if (!parsed.success) return malformed();
      const s = parsed.data;
      const session = {
        id: s.id,
        paymentStatus: s.payment_status,
        paymentIntentId: s.payment_intent ?? null,
        amountTotal: s.amount_total ?? null,
        currency: s.currency ?? null,
        purchaseId: s.metadata?.purchaseId ?? null,
        orgId: s.client_reference_id ?? s.metadata?.orgId ?? null,
      };
      if (event.type === "checkout.session.async_payment_failed") return reply(await closeSession(services.db, session, "failed", at));
      if (event.type === "checkout.session.expired") return reply(await closeSession(services.db, session, "expired", at));
      const outcome = await settleSession(services.db, session, at);
      if (outcome === "mismatch") log.warn({ eventId: event.id, sessionId: s.id }, "Stripe session amount differs from its purchase's pack: not credited");
      if (outcome === "credited" && session.paymentIntentId) await fetchReceipt(services, log, session.id, session.paymentIntentId);
      return reply(outcome);
    }
    case "charge.refunded": {
      const parsed = chargeSchema.safeParse(object);
      if (!parsed.success) return malformed();
      const charge = parsed.data;
      if (!charge.payment_intent) return reply("ignored");
      const ref = `refund:${charge.id}:${charge.amount_refunded}`;
      const reversal = { ref, kind: "refund" as const, paymentIntentId: charge.payment_intent, cents: charge.amount_refunded, receiptUrl: charge.receipt_url };
      return reply(await recordReversal(services.db, reversal, at, () => orgOfPayment(services, charge.payment_intent!)));
    }
    case "charge.dispute.created": {
      const parsed = disputeSchema.safeParse(object);
      if (!parsed.success) return malformed();
      const dispute = parsed.data;
      if (!dispute.payment_intent) return reply("ignored");
      const reversal = { ref: `dispute:${dispute.id}`, kind: "dispute" as const, paymentIntentId: dispute.payment_intent, cents: dispute.amount };
      return reply(await recordReversal(services.db, reversal, at, () => orgOfPayment(services, dispute.payment_intent!)));
    }
    default:
      return reply("ignored");
  }
}

/**
 * The org a payment was made for, from its payment intent's metadata (the Checkout session set it,
 * purchases.ts), read from Stripe: for a refund or dispute that came before the session's
 * completion. A failure to read it fails the delivery (503), and Stripe delivers it again.
 */
async function orgOfPayment(services: Services, paymentIntentId: string): Promise<string | null> {
  const intent = await (await stripeOf(services.config)).paymentIntents.retrieve(paymentIntentId, {}, { timeout: 5_000, maxNetworkRetries: 0 });
  return intent.metadata?.orgId || null;
}

/**
 * The purchase's receipt link lives on its charge, which the session does not carry: read it
 * from Stripe once the credit has committed. Best effort: a failure leaves the link empty and
 * costs the buyer nothing (a later charge.refunded fills it too).
 */
async function fetchReceipt(services: Services, log: Logger, sessionId: string, paymentIntentId: string): Promise<void> {
  try {
    const intent = await (await stripeOf(services.config)).paymentIntents.retrieve(paymentIntentId, { expand: ["latest_charge"] }, { timeout: 5_000, maxNetworkRetries: 0 });
    const charge = intent.latest_charge;
    if (charge && typeof charge === "object" && charge.receipt_url) await saveReceiptUrl(services.db, sessionId, charge.receipt_url);
  } catch (error) {
    log.warn({ sessionId, reason: String((error as Error).message).slice(0, 200) }, "Stripe receipt link not read");
  }
}
