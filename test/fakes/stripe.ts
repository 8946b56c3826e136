import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import Stripe from "stripe";
import { checkCheckout, parseStripeForm, rid, stripeEvent, type FakeCharge, type FakeSession, type StripeEvent } from "./stripe-api.ts";

/**
 * A local stand-in for Stripe, as a real HTTP server the `stripe` SDK reaches through
 * STRIPE_API_URL. It checks what it receives the way Stripe does (the secret key as a Bearer
 * token, a form-encoded body, the Checkout parameters Retasc must send) and refuses otherwise,
 * recording each refusal in `problems`. Checkout sessions get a `url` to a Checkout page it
 * serves: its Pay button marks the session paid, delivers the signed
 * `checkout.session.completed` webhook to `webhookUrl` and redirects to the session's
 * success_url. Signatures are made by `stripe.webhooks.generateTestHeaderString`, with the
 * webhook secret, as Stripe would sign them.
 */
export interface FakeStripe {
  url: string;
  secretKey: string;
  webhookSecret: string;
  /** Where the Checkout page delivers the completion: the app's /webhooks/stripe. */
  webhookUrl: string | null;
  /** Every API request received: method, path, parsed form, headers that matter. */
  requests: { method: string; path: string; form: Record<string, unknown>; idempotencyKey: string | null; stripeVersion: string | null }[];
  /** What the fake refused, and why (a test expects none). */
  problems: string[];
  sessions: Map<string, FakeSession>;
  charges: Map<string, FakeCharge>;
  /** Marks a session paid (or completed unpaid, a delayed payment method), with a payment intent and a charge, and returns its completion event. */
  complete(sessionId: string, paymentStatus?: "paid" | "unpaid"): StripeEvent;
  /** The event for an async payment that succeeded later: the session is now paid. */
  asyncPaymentSucceeded(sessionId: string): StripeEvent;
  /** Refunds `cents` more of the session's charge: a `charge.refunded` event (amount_refunded is the charge's total). */
  refund(sessionId: string, cents: number): StripeEvent;
  dispute(sessionId: string, cents: number): StripeEvent;
  /** An event of any type as Stripe's webhook carries it (`deliver` signs it). */
  event(type: string, object: Record<string, unknown>): StripeEvent;
  /** The Stripe-Signature header for a payload: with the webhook secret, or another one (a forgery). */
  sign(payload: string, secret?: string): string;
  /** POSTs an event to `url` (default: webhookUrl) as Stripe does. */
  deliver(event: StripeEvent, options?: { url?: string; signature?: string | null }): Promise<Response>;
  close(): Promise<void>;
}

export async function startFakeStripe(options: { secretKey?: string; webhookSecret?: string } = {}): Promise<FakeStripe> {
  const secretKey = options.secretKey ?? `sk_test_${crypto.randomBytes(12).toString("hex")}`;
  const webhookSecret = options.webhookSecret ?? `whsec_${crypto.randomBytes(16).toString("hex")}`;
  const sessions = new Map<string, FakeSession>();
  const charges = new Map<string, FakeCharge>();
  const byIdempotencyKey = new Map<string, FakeSession>();
  const problems: string[] = [];
  const requests: FakeStripe["requests"] = [];
  let base = "";

  const stripeError = (res: http.ServerResponse, status: number, message: string, type = "invalid_request_error") => {
    problems.push(message);
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: { type, message } }));
  };
  const json = (res: http.ServerResponse, body: unknown) => res.writeHead(200, { "content-type": "application/json", "request-id": rid("req") }).end(JSON.stringify(body));

  const createSession = (form: Record<string, unknown>): FakeSession => {
    const price = (form.line_items as Record<string, Record<string, Record<string, unknown>>>)["0"]!.price_data!;
    const id = rid("cs");
    const session: FakeSession = {
      id,
      object: "checkout.session",
      mode: "payment",
      status: "open",
      payment_status: "unpaid",
      amount_total: Number(price.unit_amount),
      currency: String(price.currency),
      client_reference_id: String(form.client_reference_id),
      metadata: form.metadata as Record<string, string>,
      payment_intent: null,
      success_url: String(form.success_url),
      cancel_url: String(form.cancel_url),
      url: `${base}/c/pay/${id}`,
      created: Math.floor(Date.now() / 1000),
      livemode: false,
    };
    sessions.set(id, session);
    return session;
  };

  const sessionOf = (id: string) => {
    const session = sessions.get(id);
    if (!session) throw new Error(`fake Stripe: no session ${id}`);
    return session;
  };
  const chargeOf = (session: FakeSession) => [...charges.values()].find((c) => c.payment_intent === session.payment_intent);

  const fake: FakeStripe = {
    url: "",
    secretKey,
    webhookSecret,
    webhookUrl: null,
    requests,
    problems,
    sessions,
    charges,
    sign(payload, secret = webhookSecret) {
      return Stripe.webhooks.generateTestHeaderString({ payload, secret });
    },
    event: stripeEvent,
    complete(sessionId, paymentStatus = "paid") {
      const session = sessionOf(sessionId);
      session.status = "complete";
      session.payment_status = paymentStatus;
      if (!session.payment_intent) {
        session.payment_intent = rid("pi");
        const charge: FakeCharge = {
          id: rid("ch"),
          object: "charge",
          amount: session.amount_total,
          amount_refunded: 0,
          currency: session.currency,
          payment_intent: session.payment_intent,
          receipt_url: `${base}/receipts/${session.id}`,
          refunded: false,
        };
        charges.set(charge.id, charge);
      }
      return fake.event("checkout.session.completed", { ...session });
    },
    asyncPaymentSucceeded(sessionId) {
      const session = sessionOf(sessionId);
      session.payment_status = "paid";
      return fake.event("checkout.session.async_payment_succeeded", { ...session });
    },
    refund(sessionId, cents) {
      const charge = chargeOf(sessionOf(sessionId));
      if (!charge) throw new Error("fake Stripe: refund of a session never completed");
      charge.amount_refunded = Math.min(charge.amount, charge.amount_refunded + cents);
      charge.refunded = charge.amount_refunded === charge.amount;
      return fake.event("charge.refunded", { ...charge });
    },
    dispute(sessionId, cents) {
      const charge = chargeOf(sessionOf(sessionId));
      if (!charge) throw new Error("fake Stripe: dispute of a session never completed");
      return fake.event("charge.dispute.created", { id: rid("dp"), object: "dispute", amount: cents, currency: charge.currency, charge: charge.id, payment_intent: charge.payment_intent, status: "needs_response" });
    },
    async deliver(event, deliverOptions = {}) {
      const url = deliverOptions.url ?? fake.webhookUrl;
      if (!url) throw new Error("fake Stripe: no webhookUrl to deliver to");
      const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8", "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)" };
      const signature = deliverOptions.signature === undefined ? fake.sign(event.payload) : deliverOptions.signature;
      if (signature !== null) headers["stripe-signature"] = signature;
      return fetch(url, { method: "POST", headers, body: event.payload });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };

  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      void answer(req, res, body).catch((error: unknown) => stripeError(res, 500, `fake Stripe failed: ${(error as Error).message}`, "api_error"));
    });
  });

  async function answer(req: http.IncomingMessage, res: http.ServerResponse, body: string) {
    const url = new URL(req.url ?? "/", base);
    // The Checkout page a buyer is sent to: a Pay button, then back to the app.
    const page = /^\/c\/pay\/(cs_test_[0-9a-f]+)$/.exec(url.pathname);
    if (page) {
      const session = sessions.get(page[1]!);
      if (!session) return stripeError(res, 404, "no such Checkout session");
      if (req.method === "GET") {
        const dollars = (session.amount_total / 100).toFixed(2);
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(
          `<!doctype html><html lang="en"><head><title>Pay Retasc</title></head><body><main><h1>Retasc credit</h1><p data-testid="amount">$${dollars}</p>` +
            `<form method="post"><button type="submit">Pay $${dollars}</button></form><a href="${session.cancel_url}">Cancel</a></main></body></html>`,
        );
        return;
      }
      const event = fake.complete(session.id);
      const delivered = await fake.deliver(event).catch((error: unknown) => {
        problems.push(`webhook delivery failed: ${(error as Error).message}`);
        return null;
      });
      if (delivered && !delivered.ok) problems.push(`webhook answered ${delivered.status}: ${await delivered.text()}`);
      res.writeHead(303, { location: session.success_url.replace("{CHECKOUT_SESSION_ID}", session.id) }).end();
      return;
    }
    // What a browser asks of any page it shows.
    if (url.pathname === "/favicon.ico") return void res.writeHead(404).end();
    if (/^\/receipts\//.test(url.pathname)) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>Receipt</title><p>Receipt</p>");
      return;
    }
    if (!url.pathname.startsWith("/v1/")) return stripeError(res, 404, `unknown path ${url.pathname}`);
    if (req.headers.authorization !== `Bearer ${secretKey}`) return stripeError(res, 401, "Invalid API Key provided", "authentication_error");
    const stripeVersion = typeof req.headers["stripe-version"] === "string" ? req.headers["stripe-version"] : null;
    const idempotencyKey = typeof req.headers["idempotency-key"] === "string" ? req.headers["idempotency-key"] : null;
    const form = req.method === "POST" ? parseStripeForm(body) : parseStripeForm(url.search.slice(1));
    requests.push({ method: req.method ?? "GET", path: url.pathname, form, idempotencyKey, stripeVersion });
    if (req.method === "POST" && url.pathname === "/v1/checkout/sessions") {
      if (!String(req.headers["content-type"]).startsWith("application/x-www-form-urlencoded")) return stripeError(res, 400, "body must be form-encoded");
      if (idempotencyKey && byIdempotencyKey.has(idempotencyKey)) return json(res, byIdempotencyKey.get(idempotencyKey));
      const wrong = checkCheckout(form);
      if (wrong) return stripeError(res, 400, wrong);
      const session = createSession(form);
      if (idempotencyKey) byIdempotencyKey.set(idempotencyKey, session);
      return json(res, session);
    }
    const retrieve = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(url.pathname);
    if (req.method === "GET" && retrieve) {
      const session = sessions.get(retrieve[1]!);
      return session ? json(res, session) : stripeError(res, 404, `No such checkout.session: ${retrieve[1]}`);
    }
    const intent = /^\/v1\/payment_intents\/([^/]+)$/.exec(url.pathname);
    if (req.method === "GET" && intent) {
      const charge = [...charges.values()].find((c) => c.payment_intent === intent[1]);
      if (!charge) return stripeError(res, 404, `No such payment_intent: ${intent[1]}`);
      const expand = (form.expand as Record<string, string> | undefined) ?? {};
      const expanded = Object.values(expand).includes("latest_charge");
      // The session's metadata, as Checkout copies payment_intent_data.metadata onto the payment intent.
      const metadata = [...sessions.values()].find((x) => x.payment_intent === intent[1])?.metadata ?? {};
      return json(res, { id: intent[1], object: "payment_intent", amount: charge.amount, currency: charge.currency, status: "succeeded", metadata, latest_charge: expanded ? charge : charge.id });
    }
    return stripeError(res, 404, `Unrecognized request URL (${req.method}: ${url.pathname})`);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.url = base;
  return fake;
}
