import type { Route } from "./+types/webhooks.stripe";
import { receiveStripeWebhook, STRIPE_WEBHOOK_MAX_BYTES } from "../../server/billing/stripe/webhook.ts";

/**
 * Stripe's signed webhook (server/billing/stripe/webhook.ts). The edge lets /webhooks/* past its
 * cross-site check (Stripe sends no Origin; the signature is the check) but not past the body
 * limits; the body is read raw, as signed, and no larger than STRIPE_WEBHOOK_MAX_BYTES.
 */
export async function action({ request, context }: Route.ActionArgs) {
  if (request.method !== "POST") return Response.json(error("INVALID_INPUT", "only POST is accepted here", "Stripe delivers events with POST."), { status: 405, headers: { allow: "POST" } });
  const body = await readLimited(request, STRIPE_WEBHOOK_MAX_BYTES);
  if (!body) return Response.json(error("PAYLOAD_TOO_LARGE", `the body is larger than ${STRIPE_WEBHOOK_MAX_BYTES} bytes`, "Stripe's events are smaller."), { status: 413 });
  const reply = await receiveStripeWebhook(context.services, context.log, body, request.headers.get("stripe-signature"));
  return Response.json(reply.body, { status: reply.status, headers: { "cache-control": "no-store" } });
}

const error = (code: string, message: string, hint: string) => ({ error: { code, message, hint } });

/** The body as bytes, or null past `max` (stops reading there). */
async function readLimited(request: Request, max: number): Promise<Buffer | null> {
  if (!request.body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
