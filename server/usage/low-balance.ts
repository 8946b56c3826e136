import { and, desc, eq, gt } from "drizzle-orm";
import { billingCredits } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { balanceOf } from "./credit.ts";
import { billingEnabled, billingPageUrl } from "./meter.ts";

/** Under this share of the last credit added (a purchase, a grant or the signup credit), replies warn. */
const LOW_SHARE = 0.1;
/**
 * A healthy balance (twice the warning line or more) is trusted this long per org, so a busy
 * fleet's calls cost no extra reads; near the line every call reads it again.
 */
const HEALTHY_REUSE_MS = 5_000;

const healthySince = new Map<string, number>();

const usd = (microCredits: number) => `$${(microCredits / 1_000_000).toFixed(2)}`;

/**
 * The short `billing` warning a metered call's reply carries when the org's balance is under
 * 10% of the last credit added, so an agent can tell its human before its writes are refused;
 * null when billing is off or the balance is healthy.
 */
export async function lowBalanceWarning(ctx: Ctx): Promise<string | null> {
  if (!billingEnabled(ctx.config)) return null;
  const orgId = ctx.principal.orgId;
  const now = performance.now();
  if (now - (healthySince.get(orgId) ?? -Infinity) < HEALTHY_REUSE_MS) return null;
  const [balance, last] = await Promise.all([
    balanceOf(ctx.db, orgId),
    ctx.db
      .select({ microCredits: billingCredits.microCredits })
      .from(billingCredits)
      .where(and(eq(billingCredits.orgId, orgId), gt(billingCredits.microCredits, 0)))
      .orderBy(desc(billingCredits.createdAt), desc(billingCredits.id))
      .limit(1),
  ]);
  const line = (last[0]?.microCredits ?? 0) * LOW_SHARE;
  if (balance.totalMicroCredits >= 2 * line) healthySince.set(orgId, now);
  else healthySince.delete(orgId);
  if (balance.totalMicroCredits >= line) return null;
  return (
    `Credit is low: ${usd(balance.totalMicroCredits)} left of the last ${usd(last[0]!.microCredits)} added. ` +
    `Tell your human: an owner can buy more at ${billingPageUrl(ctx.config)}.`
  );
}
