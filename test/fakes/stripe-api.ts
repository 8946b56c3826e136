import crypto from "node:crypto";
import Stripe from "stripe";

/**
 * The part of Stripe's API the fake Stripe (./stripe.ts) speaks: the objects it keeps and sends
 * (a Checkout session, its charge, an event as a webhook carries it), Stripe's ids and form
 * encoding, and the Checkout parameters Retasc must send.
 */
export interface FakeSession {
  id: string;
  object: "checkout.session";
  mode: string;
  status: "open" | "complete" | "expired";
  payment_status: "unpaid" | "paid";
  amount_total: number;
  currency: string;
  client_reference_id: string | null;
  metadata: Record<string, string>;
  payment_intent: string | null;
  success_url: string;
  cancel_url: string;
  url: string;
  created: number;
  livemode: false;
}

export interface FakeCharge {
  id: string;
  object: "charge";
  amount: number;
  amount_refunded: number;
  currency: string;
  payment_intent: string;
  receipt_url: string;
  refunded: boolean;
}

export interface StripeEvent {
  id: string;
  type: string;
  payload: string;
}

const CHECKOUT_PACK_CENTS = new Set([1000, 2500, 5000, 10000]);

export const rid = (prefix: string) => `${prefix}_test_${crypto.randomBytes(12).toString("hex")}`;

/** Stripe's form encoding (`a[b][0][c]=v`) back into nested objects; arrays where the keys are indexes. */
export function parseStripeForm(body: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const parts = key.replace(/\]/g, "").split("[");
    let node: Record<string, unknown> = root;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node[part] = value;
      else node = (node[part] ??= {}) as Record<string, unknown>;
    });
  }
  return root;
}

/** What Retasc must send to create a Checkout session; a description of the first thing wrong, or null. */
export function checkCheckout(form: Record<string, unknown>): string | null {
  const items = form.line_items as Record<string, Record<string, unknown>> | undefined;
  const item = items?.["0"];
  const price = item?.price_data as Record<string, unknown> | undefined;
  const metadata = form.metadata as Record<string, string> | undefined;
  if (form.mode !== "payment") return "mode must be payment";
  if (!item || Object.keys(items!).length !== 1 || item.quantity !== "1") return "one line item of quantity 1";
  if (price?.currency !== "usd" || !CHECKOUT_PACK_CENTS.has(Number(price.unit_amount))) return "price_data must be usd 1000/2500/5000/10000";
  if (!(price.product_data as Record<string, unknown> | undefined)?.name) return "price_data.product_data.name is required";
  if (typeof form.client_reference_id !== "string" || !form.client_reference_id) return "client_reference_id (the org) is required";
  if (metadata?.orgId !== form.client_reference_id || !metadata.purchaseId || metadata.pack !== String(Number(price.unit_amount) / 100)) return "metadata must carry orgId, purchaseId and pack";
  for (const url of ["success_url", "cancel_url"] as const) {
    if (typeof form[url] !== "string" || !/^https?:\/\//.test(form[url] as string)) return `${url} must be an absolute URL`;
  }
  if (!(form.success_url as string).includes("{CHECKOUT_SESSION_ID}")) return "success_url should carry {CHECKOUT_SESSION_ID}";
  return null;
}

/** An event of any type as Stripe's webhook sends it (`FakeStripe.event`); the fake signs it as it delivers it. */
export function stripeEvent(type: string, object: Record<string, unknown>): StripeEvent {
  const id = rid("evt");
  const payload = JSON.stringify(
    {
      id,
      object: "event",
      api_version: Stripe.API_VERSION,
      created: Math.floor(Date.now() / 1000),
      type,
      data: { object },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
    },
    null,
    2,
  );
  return { id, type, payload };
}
