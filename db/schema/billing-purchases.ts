import { bigint, index, integer, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { orgIdColumn } from "./orgs.ts";

export const purchaseStatuses = ["open", "paid", "failed", "expired", "refunded"] as const;
export type PurchaseStatus = (typeof purchaseStatuses)[number];

/**
 * A credit pack bought through Stripe Checkout (server/billing/purchases.ts). The row is
 * written before the Checkout session is created (its id travels in the session's metadata),
 * so a payment always finds its purchase; the credit itself is a billing_credits row with
 * ref = the session id, added once when Stripe's signed webhook says the session is paid.
 */
export const billingPurchases = pgTable(
  "billing_purchases",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    /** Who started the purchase (an owner or admin); kept when they leave the org. */
    userId: text("user_id"),
    packUsd: integer("pack_usd").notNull(),
    microCredits: bigint("micro_credits", { mode: "number" }).notNull(),
    status: text("status", { enum: purchaseStatuses }).notNull().default("open"),
    checkoutSessionId: text("checkout_session_id"),
    paymentIntentId: text("payment_intent_id"),
    receiptUrl: text("receipt_url"),
    /** Bought credit taken back by refunds and disputes so far (never more than microCredits). */
    reversedMicroCredits: bigint("reversed_micro_credits", { mode: "number" }).notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
    paidAt: timestamp("paid_at", { withTimezone: true }),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    uniqueIndex("billing_purchases_session_uq").on(t.checkoutSessionId),
    index("billing_purchases_org_idx").on(t.orgId, t.createdAt),
    index("billing_purchases_payment_intent_idx").on(t.paymentIntentId),
  ],
);

export const reversalKinds = ["refund", "dispute"] as const;

/**
 * A refund (`charge.refunded`) or dispute (`charge.dispute.created`) Stripe told us about, by
 * its payment intent. Stripe may send it before the session's completion: it waits here
 * (appliedAt null) until the purchase is paid, then becomes a negative bought credit once.
 * ref is the credit's ref: `refund:<charge>:<cents refunded so far>` or `dispute:<dispute>`.
 * org_id is the org of the payment it reverses (its purchase's, else the payment intent's
 * metadata; migration 0078), so a move publishes it by org like every org-owned row (decision 110).
 */
export const billingStripeReversals = pgTable(
  "billing_stripe_reversals",
  {
    ref: text("ref").primaryKey(),
    orgId: orgIdColumn(),
    kind: text("kind", { enum: reversalKinds }).notNull(),
    paymentIntentId: text("payment_intent_id").notNull(),
    /** For a refund: what the charge has had refunded in all (Stripe's amount_refunded); for a dispute: its amount. */
    cents: integer("cents").notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull(),
    appliedAt: timestamp("applied_at", { withTimezone: true }),
    /** What it took back from the org's bought credit (0 when earlier reversals already covered it). */
    appliedMicroCredits: bigint("applied_micro_credits", { mode: "number" }),
  },
  (t) => [index("billing_stripe_reversals_pi_idx").on(t.paymentIntentId)],
);
