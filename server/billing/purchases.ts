import { and, desc, eq, inArray } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { billingPurchases } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError } from "../errors.ts";
import { actorOf, requireRole } from "../orgs/access.ts";
import { newId } from "../orgs/index.ts";
import { refuseWhileFrozen } from "../orgs/freeze.ts";
import { stripeOf } from "./stripe/client.ts";

/** The credit packs on sale, in US dollars. */
export const CREDIT_PACKS_USD = [10, 25, 50, 100] as const;
export type CreditPackUsd = (typeof CREDIT_PACKS_USD)[number];

/** One dollar buys a million micro-credits (the rate card's unit: the $10 seed is 10,000,000). */
export const MICRO_CREDITS_PER_CENT = 10_000;

export const buyCreditInput = z.object({
  pack: z.coerce
    .number()
    .refine((n): n is CreditPackUsd => (CREDIT_PACKS_USD as readonly number[]).includes(n), { message: `must be one of ${CREDIT_PACKS_USD.join(", ")} (US dollars)` })
    .describe("the pack to buy, in US dollars: 10, 25, 50 or 100"),
});

export const billingOff = () =>
  new DomainError("INVALID_INPUT", "billing is off on this server: nothing is charged, so there is no credit to buy", "An operator turns it on with RETASC_BILLING=on.");

/**
 * Starts buying a credit pack (the owners': billing is theirs, decision 043): records the purchase, then creates its
 * Stripe Checkout session (mode payment, the org's id as client_reference_id) and returns the
 * Checkout URL to send the buyer to. `baseUrl` is this app's URL as the buyer reaches it,
 * where Checkout sends them back. Nothing is credited here: the signed webhook does that
 * (server/billing/stripe/webhook.ts) once Stripe says the session is paid.
 */
export async function buyCredit(ctx: Ctx, raw: z.input<typeof buyCreditInput>, door: { baseUrl: string }) {
  refuseWhileFrozen(ctx.principal);
  const { pack } = buyCreditInput.parse(raw);
  if (ctx.config.RETASC_BILLING !== "on") throw billingOff();
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner"], "buying credit");
  const orgId = ctx.principal.orgId;
  const purchaseId = newId();
  const now = ctx.clock.now();
  const cents = pack * 100;
  await ctx.db.insert(billingPurchases).values({
    id: purchaseId,
    orgId,
    userId: ctx.principal.userId,
    packUsd: pack,
    microCredits: cents * MICRO_CREDITS_PER_CENT,
    createdAt: now,
    updatedAt: now,
  });
  const metadata = { orgId, purchaseId, pack: String(pack), userId: ctx.principal.userId ?? "" };
  const back = `${door.baseUrl}/dash/settings/billing`;
  const session = await (await stripeOf(ctx.config)).checkout.sessions
    .create(
      {
        mode: "payment",
        client_reference_id: orgId,
        line_items: [{ quantity: 1, price_data: { currency: "usd", unit_amount: cents, product_data: { name: `Retasc credit, $${pack}` } } }],
        metadata,
        payment_intent_data: { metadata },
        success_url: `${back}?checkout=paid&session_id={CHECKOUT_SESSION_ID}`,
        cancel_url: `${back}?checkout=canceled`,
      },
      { idempotencyKey: `retasc-purchase-${purchaseId}` },
    )
    .catch((error: unknown) => {
      throw new DomainError("UNAVAILABLE", `Stripe did not create the Checkout session (${stripeMessage(error)})`, "Try again in a minute; nothing was charged.");
    });
  if (!session.url) throw new DomainError("UNAVAILABLE", "Stripe created a Checkout session without a URL", "Try again; nothing was charged.");
  await ctx.db
    .update(billingPurchases)
    .set({ checkoutSessionId: session.id, updatedAt: ctx.clock.now() })
    .where(eq(billingPurchases.id, purchaseId));
  return { purchaseId, pack, checkoutSessionId: session.id, url: session.url };
}

function stripeMessage(error: unknown): string {
  const e = error as { type?: string; message?: string };
  return [e.type, e.message].filter(Boolean).join(": ").slice(0, 200) || "no answer";
}

export interface PurchaseView {
  purchaseId: string;
  packUsd: number;
  microCredits: number;
  status: string;
  /** Bought credit refunds and disputes have taken back. */
  reversedMicroCredits: number;
  receiptUrl: string | null;
  userId: string | null;
  createdAt: string;
  paidAt: string | null;
}

/** The org's purchases that got as far as a payment (paid, failed, refunded), newest first: for billing_summary and the Dash. */
export async function listPurchases(db: Db, orgId: string, limit = 50): Promise<PurchaseView[]> {
  const rows = await db
    .select()
    .from(billingPurchases)
    .where(and(eq(billingPurchases.orgId, orgId), inArray(billingPurchases.status, ["paid", "refunded", "failed"])))
    .orderBy(desc(billingPurchases.createdAt), desc(billingPurchases.id))
    .limit(limit);
  return rows.map((row) => ({
    purchaseId: row.id,
    packUsd: row.packUsd,
    microCredits: row.microCredits,
    status: row.status,
    reversedMicroCredits: row.reversedMicroCredits,
    receiptUrl: row.receiptUrl,
    userId: row.userId,
    createdAt: row.createdAt.toISOString(),
    paidAt: row.paidAt?.toISOString() ?? null,
  }));
}
