import { and, eq, gte, sql } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import { billingAccounts, billingCharges, billingCreditSlices, orgs } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { actorOf, recordOrgActivity, requireRole } from "../orgs/access.ts";
import { balanceOf } from "../usage/credit.ts";
import { billingEnabled } from "../usage/meter.ts";
import { rateCardView } from "../usage/rate-card.ts";
import { listPurchases } from "./purchases.ts";

export const billingSummaryInput = z.object({});
export const setSpendCapInput = z.object({
  monthlyUsd: z
    .number()
    .min(0, "must be 0 or more")
    .max(1_000_000, "must be at most 1,000,000")
    .nullable()
    .describe("the monthly spend cap in US dollars; null lifts it"),
});

const MICRO_CREDITS_PER_USD = 1_000_000;

/** The month the cap counts (its first instant in the org's time zone), and what the org spent in it. */
export async function monthOf(db: Db, orgId: string, now: Date) {
  const [row] = await query<{ month_start: string; time_zone: string; spent: string }>(
    db,
    sql`select retasc_billing_month_start(${orgId}::text, ${now.toISOString()}::timestamptz) as month_start, o.time_zone,
          (select coalesce(sum(s.month_spent), 0) from ${billingCreditSlices} s
            where s.org_id = o.id and s.month_start = retasc_billing_month_start(${orgId}::text, ${now.toISOString()}::timestamptz)) as spent
        from ${orgs} o where o.id = ${orgId}`,
  );
  return { monthStartsAt: new Date(row!.month_start), timeZone: row!.time_zone, spentMicroCredits: Number(row!.spent) };
}

/** The org's monthly cap in micro-credits, or null. */
export async function spendCapOf(db: Db, orgId: string): Promise<number | null> {
  const rows = await db.select({ cap: billingAccounts.monthlyCapMicroCredits }).from(billingAccounts).where(eq(billingAccounts.orgId, orgId));
  return rows[0]?.cap ?? null;
}

/**
 * The billing picture. Owners and admins: balance (given and bought), this month's spend
 * against the cap, purchases. Members (and their agents): their own spend this month and the
 * rate card. Off: says so, with no figures.
 */
export async function billingSummary(ctx: Ctx, raw: z.input<typeof billingSummaryInput> = {}) {
  billingSummaryInput.parse(raw);
  const rateCard = rateCardView();
  if (!billingEnabled(ctx.config)) {
    return {
      enabled: false,
      balance: null,
      spendCap: null,
      purchases: [],
      yourSpendThisMonthMicroCredits: 0,
      signupCreditMicroCredits: 0,
      rateCard,
      note: "Billing is off on this server: nothing is charged and no write is refused for billing.",
    };
  }
  const orgId = ctx.principal.orgId;
  const now = ctx.clock.now();
  const actor = await actorOf(ctx);
  const month = await monthOf(ctx.db, orgId, now);
  const yours = ctx.principal.userId
    ? await ctx.db
        .select({ spent: sql<string>`coalesce(sum(${billingCharges.microCredits}), 0)` })
        .from(billingCharges)
        .where(and(eq(billingCharges.orgId, orgId), eq(billingCharges.userId, ctx.principal.userId), gte(billingCharges.createdAt, month.monthStartsAt)))
    : [];
  const common = {
    enabled: true,
    yourSpendThisMonthMicroCredits: Number(yours[0]?.spent ?? 0),
    signupCreditMicroCredits: ctx.config.BILLING_SIGNUP_CREDIT,
    rateCard,
  };
  if (actor.role === "member") {
    return {
      ...common,
      balance: null,
      spendCap: null,
      purchases: [],
      note: "Billing is on. Owners and admins see the org's balance, cap and purchases; this is your own spend.",
    };
  }
  const [balance, cap, purchases] = await Promise.all([balanceOf(ctx.db, orgId), spendCapOf(ctx.db, orgId), listPurchases(ctx.db, orgId)]);
  return {
    ...common,
    balance,
    spendCap: {
      monthlyMicroCredits: cap,
      spentThisMonthMicroCredits: month.spentMicroCredits,
      monthStartsAt: month.monthStartsAt.toISOString(),
      timeZone: month.timeZone,
    },
    purchases,
    note:
      balance.totalMicroCredits === 0
        ? "Billing is on and the org is out of credit: metered writes are refused (BILLING_INACTIVE) until an owner buys credit."
        : "Billing is on: each accepted write is charged by its tier; reads are free.",
  };
}

/** Sets or lifts the org's monthly spend cap (owners only). Over it, metered writes fail SPEND_CAP until the month turns. */
export async function setSpendCap(ctx: Ctx, raw: z.input<typeof setSpendCapInput>) {
  const { monthlyUsd } = setSpendCapInput.parse(raw);
  const orgId = ctx.principal.orgId;
  const monthlyMicroCredits = monthlyUsd === null ? null : Math.round(monthlyUsd * MICRO_CREDITS_PER_USD);
  return ctx.db.transaction(async (tx) => {
    requireRole(await actorOf(ctx, tx), ["owner"], "setting the spend cap");
    const now = ctx.clock.now();
    await tx
      .insert(billingAccounts)
      .values({ orgId, monthlyCapMicroCredits: monthlyMicroCredits, updatedAt: now })
      .onConflictDoUpdate({ target: billingAccounts.orgId, set: { monthlyCapMicroCredits: monthlyMicroCredits, updatedAt: now } });
    await recordOrgActivity(ctx, tx, "billing.cap_set", { monthlyMicroCredits });
    return { monthlyMicroCredits, monthlyUsd };
  });
}
