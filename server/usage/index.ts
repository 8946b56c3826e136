import { and, count, desc, eq, gte } from "drizzle-orm";
import { z } from "zod";
import { activity } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { meterTiers, rateCard, signupCreditMicroCredits } from "./rate-card.ts";

export const usageSummaryInput = z.object({});
export const billingSummaryInput = z.object({});

function rateCardView() {
  return {
    unit: "micro-credit" as const,
    microCreditsPerUsd: 1_000_000,
    tiers: meterTiers.map((tier) => ({ tier, microCredits: rateCard[tier] })),
    free: "reads, an empty next_issue, a next_batch peek",
  };
}

/**
 * What the org's people and agents did: writes counted from the activity log, this
 * calendar month (UTC) and in total, beside the rate card. Billing is not wired in
 * yet, so nothing here is a charge.
 */
export async function usageSummary(ctx: Ctx, raw: z.input<typeof usageSummaryInput>) {
  usageSummaryInput.parse(raw);
  const { orgId } = ctx.principal;
  const now = ctx.clock.now();
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const [byKind, lifetime] = await Promise.all([
    ctx.db
      .select({ kind: activity.kind, n: count() })
      .from(activity)
      .where(and(eq(activity.orgId, orgId), gte(activity.createdAt, monthStart)))
      .groupBy(activity.kind)
      .orderBy(desc(count()), activity.kind),
    ctx.db.select({ n: count() }).from(activity).where(eq(activity.orgId, orgId)),
  ]);
  const thisMonth = byKind.map((row) => ({ kind: row.kind, count: Number(row.n) }));
  return {
    period: { from: monthStart.toISOString(), to: now.toISOString() },
    writesThisMonth: thisMonth.reduce((sum, row) => sum + row.count, 0),
    byKind: thisMonth,
    writesAllTime: Number(lifetime[0]?.n ?? 0),
    metered: false,
    rateCard: rateCardView(),
    note: "Metering is not enabled on this server: these are activity counts, not charges.",
  };
}

/** The billing picture. This server has no billing wired in, and says so rather than inventing figures. */
export async function billingSummary(ctx: Ctx, raw: z.input<typeof billingSummaryInput>) {
  billingSummaryInput.parse(raw);
  return {
    enabled: false,
    balanceMicroCredits: null,
    signupCreditMicroCredits,
    spendCapMicroCredits: null,
    rateCard: rateCardView(),
    note: "Billing is not enabled on this server: nothing is charged and no write is refused for billing.",
  };
}
