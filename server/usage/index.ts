import { and, desc, eq, gte, sql } from "drizzle-orm";
import { z } from "zod";
import { query } from "../../db/client.ts";
import { activity, billingCharges, issues } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { billingEnabled } from "./meter.ts";
import { rateCardView } from "./rate-card.ts";

export const usageSummaryInput = z.object({});

/**
 * The caller's own meter this month (the month starts in the org's time zone): with billing
 * on, its charges from the ledger by tool and tier, as the person and key that acted; off,
 * the writes it made, counted from the activity log. Beside the rate card. `byChangeType` splits
 * what touched an issue by the issue's changeType ("none" when it has none; decision 059): what
 * touched no issue (a key, a member) is in neither.
 */
export async function usageSummary(ctx: Ctx, raw: z.input<typeof usageSummaryInput>) {
  usageSummaryInput.parse(raw);
  const { orgId, userId, keyId } = ctx.principal;
  const now = ctx.clock.now();
  const [month] = await query<{ start: string }>(
    ctx.db,
    sql`select retasc_billing_month_start(${orgId}::text, ${now.toISOString()}::timestamptz) as start`,
  );
  const from = new Date(month!.start);
  const period = { from: from.toISOString(), to: now.toISOString() };
  // An agent's meter is its key's; a person in the Dash or CLI (no key) sees theirs.
  const mine = keyId ? { charges: eq(billingCharges.keyId, keyId), writes: eq(activity.keyId, keyId) } : {
    charges: eq(billingCharges.userId, userId ?? ""),
    writes: eq(activity.actorId, userId ?? ""),
  };
  const metered = billingEnabled(ctx.config);
  const changeType = sql<string>`coalesce(${issues.changeType}, 'none')`;
  // A run of heartbeats is one row that counts its beats (decision 105): each beat is a write.
  const beatWrites = sql<string>`sum(case when ${activity.kind} = 'heartbeat' then coalesce((${activity.facts}->>'beats')::int, 1) else 1 end)`;
  const [byTool, byKind, chargedByType, writtenByType] = await Promise.all([
    metered
      ? ctx.db
          .select({ tool: billingCharges.tool, tier: billingCharges.tier, calls: sql<string>`count(*)`, microCredits: sql<string>`sum(${billingCharges.microCredits})` })
          .from(billingCharges)
          .where(and(eq(billingCharges.orgId, orgId), mine.charges, gte(billingCharges.createdAt, from)))
          .groupBy(billingCharges.tool, billingCharges.tier)
          .orderBy(desc(sql`sum(${billingCharges.microCredits})`), billingCharges.tool)
      : Promise.resolve([]),
    ctx.db
      .select({ kind: activity.kind, n: beatWrites })
      .from(activity)
      .where(and(eq(activity.orgId, orgId), mine.writes, gte(activity.createdAt, from)))
      .groupBy(activity.kind)
      .orderBy(desc(beatWrites), activity.kind),
    metered
      ? ctx.db
          .select({ changeType, microCredits: sql<string>`sum(${billingCharges.microCredits})` })
          .from(billingCharges)
          .innerJoin(issues, eq(issues.id, billingCharges.issueId))
          .where(and(eq(billingCharges.orgId, orgId), mine.charges, gte(billingCharges.createdAt, from)))
          .groupBy(changeType)
      : Promise.resolve([]),
    ctx.db
      .select({ changeType, n: beatWrites })
      .from(activity)
      .innerJoin(issues, eq(issues.id, activity.issueId))
      .where(and(eq(activity.orgId, orgId), mine.writes, gte(activity.createdAt, from)))
      .groupBy(changeType),
  ]);
  // A heartbeat is charged and writes no activity: the two are joined on the changeType.
  const charged = new Map(chargedByType.map((row) => [row.changeType, Number(row.microCredits)]));
  const written = new Map(writtenByType.map((row) => [row.changeType, Number(row.n)]));
  const byChangeType = [...new Set([...charged.keys(), ...written.keys()])]
    .map((type) => ({ changeType: type, writes: written.get(type) ?? 0, microCredits: charged.get(type) ?? 0 }))
    .sort((a, b) => b.microCredits - a.microCredits || b.writes - a.writes || a.changeType.localeCompare(b.changeType));
  const charges = byTool.map((row) => ({ tool: row.tool, tier: row.tier, calls: Number(row.calls), microCredits: Number(row.microCredits) }));
  const writes = byKind.map((row) => ({ kind: row.kind, count: Number(row.n) }));
  return {
    period,
    metered,
    spentMicroCredits: charges.reduce((sum, row) => sum + row.microCredits, 0),
    byTool: charges,
    writesThisMonth: writes.reduce((sum, row) => sum + row.count, 0),
    byKind: writes,
    byChangeType,
    rateCard: rateCardView(),
    note: metered
      ? "Your charges this month, from the ledger (billing_summary has the org's balance and cap)."
      : "Billing is off on this server: these are your writes this month, and nothing is charged.",
  };
}
