import type Stripe from "stripe";
import type { Config } from "../../config/index.ts";
import { DomainError } from "../../errors.ts";
import { clientPerConfig, onFirstUse } from "../../on-first-use.ts";

/** The SDK; its error classes are `stripeSdk.loaded?.errors` once a client has been made. */
export const stripeSdk = onFirstUse(async () => (await import("stripe")).default);
/**
 * The Stripe API client of this process, at STRIPE_API_URL (its protocol, host and port: tests
 * point it at test/fakes/stripe.ts). Built once per Config. The SDK retries network
 * failures with idempotency keys of its own, so a retried create makes one session.
 */
export const stripeOf = clientPerConfig(async (config: Config): Promise<Stripe> => {
  if (!config.STRIPE_SECRET_KEY) throw billingNotConfigured();
  const api = new URL(config.STRIPE_API_URL);
  const protocol = api.protocol === "http:" ? "http" : "https";
  const StripeClient = await stripeSdk.load();
  return new StripeClient(config.STRIPE_SECRET_KEY, {
    host: api.hostname,
    port: api.port || (protocol === "http" ? 80 : 443),
    protocol,
    maxNetworkRetries: 2,
    timeout: 20_000,
    telemetry: false,
  });
});

export const billingNotConfigured = () =>
  new DomainError("UNAVAILABLE", "billing is not configured on this server", "An operator sets RETASC_BILLING=on with STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET.");
