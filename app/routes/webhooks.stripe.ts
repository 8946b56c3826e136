import type { Route } from "./+types/webhooks.stripe";
import { receiveStripeWebhook, STRIPE_WEBHOOK_MAX_BYTES } from "../../server/billing/stripe/webhook.ts";

/**
 * Stripe's signed webhook (server/billing/stripe/webhook.ts). The edge lets /webhooks/* past its
 * cross-site check (Stripe sends no Origin; the signature is the check) but not past its body
 * limits, which also make every body declare its length (411 otherwise); a length over
 * STRIPE_WEBHOOK_MAX_BYTES is refused unread. The body is handed over raw, as it was signed.
 */
export async function action({ request, context }: Route.ActionArgs) {
  if (request.method !== "POST") return refuse(405, "INVALID_INPUT", "only POST is accepted here", "Stripe delivers events with POST.");
  if (!(Number(request.headers.get("content-length") ?? 0) <= STRIPE_WEBHOOK_MAX_BYTES)) {
    return refuse(413, "PAYLOAD_TOO_LARGE", `the body is larger than ${STRIPE_WEBHOOK_MAX_BYTES} bytes`, "Stripe's events are smaller.");
  }
  const body = Buffer.from(await request.arrayBuffer());
  const reply = await receiveStripeWebhook(context.services, context.log, body, request.headers.get("stripe-signature"));
  return Response.json(reply.body, { status: reply.status, headers: { "cache-control": "no-store" } });
}

const refuse = (status: number, code: string, message: string, hint: string) =>
  Response.json({ error: { code, message, hint } }, { status, headers: { "cache-control": "no-store" } });
