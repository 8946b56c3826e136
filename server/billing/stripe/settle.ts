import { and, eq, isNull, or, sql } from "drizzle-orm";
import type { Db } from "../../../db/client.ts";
import { billingPurchases, billingStripeReversals, orgs } from "../../../db/schema/index.ts";
import { addCredit } from "../index.ts";
import { MICRO_CREDITS_PER_CENT } from "../purchases.ts";
import { isOrgFrozen, orgFrozen } from "../../orgs/freeze.ts";

/**
 * What Stripe's events do to purchases and credit, each in one transaction. Every event about
 * a payment first takes a transaction lock on its payment (the payment intent, else the
 * session), so a completion and a refund of the same payment, or one event delivered to two
 * instances at once, run one after the other; the credit rows are idempotent on their ref
 * besides, so a replay adds nothing. A frozen org's event is refused (ORG_FROZEN, rolled back) for
 * Stripe to deliver again after the move (decision 110).
 */
export type Settled = "credited" | "already" | "unpaid" | "unknown" | "mismatch" | "recorded" | "reversed" | "pending" | "closed";

type Purchase = typeof billingPurchases.$inferSelect;

export interface PaidSession {
  id: string;
  paymentStatus: string;
  paymentIntentId: string | null;
  amountTotal: number | null;
  currency: string | null;
  purchaseId: string | null;
  orgId: string | null;
}

/** `pg_advisory_xact_lock` on a payment: held to the end of the transaction. */
async function lockPayment(tx: Db, key: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`retasc:stripe:${key}`}, 0))`);
}

/** The purchase a session belongs to: by its session id, else by the purchase id in its metadata (of the same org). */
async function purchaseOf(tx: Db, session: Pick<PaidSession, "id" | "purchaseId" | "orgId">): Promise<Purchase | null> {
  const bySession = eq(billingPurchases.checkoutSessionId, session.id);
  const byMetadata =
    session.purchaseId && session.orgId ? and(eq(billingPurchases.id, session.purchaseId), eq(billingPurchases.orgId, session.orgId)) : undefined;
  const rows = await tx
    .select()
    .from(billingPurchases)
    .where(byMetadata ? or(bySession, byMetadata) : bySession)
    .for("update");
  return rows.find((r) => r.checkoutSessionId === session.id) ?? rows.find((r) => r.checkoutSessionId === null) ?? null;
}

/**
 * `checkout.session.completed` and `checkout.session.async_payment_succeeded`. Paid: the
 * purchase's credit is added once (ref = the session id) and any refund or dispute that came
 * first is applied. Unpaid (a delayed payment method): the payment is noted, nothing credited;
 * async_payment_succeeded credits it later.
 */
export async function settleSession(db: Db, session: PaidSession, at: Date): Promise<Settled> {
  return db.transaction(async (tx) => {
    await lockPayment(tx, session.paymentIntentId ?? session.id);
    const purchase = await purchaseOf(tx, session);
    if (!purchase) return "unknown";
    if (await isOrgFrozen(tx, purchase.orgId)) throw orgFrozen();
    const link = { checkoutSessionId: session.id, paymentIntentId: session.paymentIntentId ?? purchase.paymentIntentId, updatedAt: at };
    if (session.paymentStatus !== "paid") {
      await tx.update(billingPurchases).set(link).where(eq(billingPurchases.id, purchase.id));
      return "unpaid";
    }
    // Stripe charged what the session says; a session for another amount than the pack is not this purchase's.
    if (session.amountTotal !== purchase.packUsd * 100 || session.currency?.toLowerCase() !== "usd") return "mismatch";
    const { added } = await addCredit(tx, {
      orgId: purchase.orgId,
      kind: "bought",
      microCredits: purchase.microCredits,
      source: "stripe",
      ref: session.id,
      note: `Stripe Checkout: $${purchase.packUsd}`,
      at,
    });
    const paid = purchase.status === "paid" || purchase.status === "refunded";
    await tx
      .update(billingPurchases)
      .set({ ...link, ...(paid ? {} : { status: "paid" as const, paidAt: at }) })
      .where(eq(billingPurchases.id, purchase.id));
    if (link.paymentIntentId) {
      const waiting = await tx
        .select()
        .from(billingStripeReversals)
        .where(and(eq(billingStripeReversals.paymentIntentId, link.paymentIntentId), isNull(billingStripeReversals.appliedAt)))
        .orderBy(billingStripeReversals.receivedAt, billingStripeReversals.ref);
      let current: Purchase = { ...purchase, ...link, status: paid ? purchase.status : "paid" };
      for (const reversal of waiting) current = await applyReversal(tx, current, reversal, at);
    }
    return added ? "credited" : "already";
  });
}

/** `checkout.session.async_payment_failed` and `checkout.session.expired`: the purchase ends without credit. */
export async function closeSession(db: Db, session: PaidSession, status: "failed" | "expired", at: Date): Promise<Settled> {
  return db.transaction(async (tx) => {
    await lockPayment(tx, session.paymentIntentId ?? session.id);
    const purchase = await purchaseOf(tx, session);
    if (!purchase) return "unknown";
    if (await isOrgFrozen(tx, purchase.orgId)) throw orgFrozen();
    if (purchase.status !== "open") return "already";
    await tx.update(billingPurchases).set({ status, checkoutSessionId: session.id, updatedAt: at }).where(eq(billingPurchases.id, purchase.id));
    return "closed";
  });
}

export interface Reversal {
  ref: string;
  kind: "refund" | "dispute";
  paymentIntentId: string;
  cents: number;
  receiptUrl?: string | null;
}

/**
 * `charge.refunded` (ref `refund:<charge>:<amount refunded so far>`) and `charge.dispute.created`
 * (ref `dispute:<dispute>`). Recorded once, with the org of the payment it reverses: its
 * purchase's, else (Stripe sent it before the completion) `orgOfPayment`'s, the payment's own
 * metadata; applied at once when the payment's purchase is paid, else when its completion
 * arrives (settleSession). A payment of no org here is "unknown", recorded nowhere.
 */
export async function recordReversal(db: Db, reversal: Reversal, at: Date, orgOfPayment: () => Promise<string | null>): Promise<Settled> {
  return db.transaction(async (tx) => {
    await lockPayment(tx, reversal.paymentIntentId);
    const known = await tx
      .select()
      .from(billingPurchases)
      .where(eq(billingPurchases.paymentIntentId, reversal.paymentIntentId))
      .for("update");
    const orgId = known[0]?.orgId ?? (await orgOfPayment());
    const [org] = orgId ? await tx.select({ frozenAt: orgs.frozenAt }).from(orgs).where(eq(orgs.id, orgId)) : [];
    if (!orgId || !org) return "unknown";
    if (org.frozenAt) throw orgFrozen();
    const inserted = await tx
      .insert(billingStripeReversals)
      .values({ ref: reversal.ref, orgId, kind: reversal.kind, paymentIntentId: reversal.paymentIntentId, cents: reversal.cents, receivedAt: at })
      .onConflictDoNothing()
      .returning();
    const purchase = known.find((p) => p.status === "paid" || p.status === "refunded");
    if (purchase && reversal.receiptUrl && !purchase.receiptUrl) {
      await tx.update(billingPurchases).set({ receiptUrl: reversal.receiptUrl }).where(eq(billingPurchases.id, purchase.id));
    }
    const row = inserted[0];
    if (!row) return "already";
    if (!purchase) return "pending";
    await applyReversal(tx, purchase, row, at);
    return "reversed";
  });
}

/**
 * Takes a refund or dispute back from the purchase's bought credit, once. A refund's cents are
 * the charge's refunded total, so only what earlier refunds did not cover is taken (Stripe
 * sends one event per refund, each with the total, in any order); nothing takes back more than
 * the purchase added.
 */
async function applyReversal(tx: Db, purchase: Purchase, reversal: typeof billingStripeReversals.$inferSelect, at: Date): Promise<Purchase> {
  const left = purchase.microCredits - purchase.reversedMicroCredits;
  let wanted = Math.min(reversal.cents * MICRO_CREDITS_PER_CENT, purchase.microCredits);
  if (reversal.kind === "refund") {
    const [refunded] = await tx
      .select({ total: sql<string>`coalesce(sum(${billingStripeReversals.appliedMicroCredits}), 0)` })
      .from(billingStripeReversals)
      .where(and(eq(billingStripeReversals.paymentIntentId, reversal.paymentIntentId), eq(billingStripeReversals.kind, "refund")));
    wanted -= Number(refunded?.total ?? 0);
  }
  const taken = Math.max(0, Math.min(wanted, left));
  if (taken > 0) {
    await addCredit(tx, {
      orgId: purchase.orgId,
      kind: "bought",
      microCredits: -taken,
      source: "stripe",
      ref: reversal.ref,
      note: `Stripe ${reversal.kind} of the $${purchase.packUsd} purchase`,
      at,
    });
  }
  await tx.update(billingStripeReversals).set({ appliedAt: at, appliedMicroCredits: taken }).where(eq(billingStripeReversals.ref, reversal.ref));
  const reversed = purchase.reversedMicroCredits + taken;
  const status = reversed >= purchase.microCredits ? ("refunded" as const) : purchase.status;
  await tx.update(billingPurchases).set({ reversedMicroCredits: reversed, status, updatedAt: at }).where(eq(billingPurchases.id, purchase.id));
  return { ...purchase, reversedMicroCredits: reversed, status };
}

/** The receipt link of a paid purchase, once known (read from Stripe after the credit committed). */
export async function saveReceiptUrl(db: Db, checkoutSessionId: string, receiptUrl: string): Promise<void> {
  await db.update(billingPurchases).set({ receiptUrl }).where(eq(billingPurchases.checkoutSessionId, checkoutSessionId));
}
