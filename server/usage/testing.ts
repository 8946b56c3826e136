import { and, eq, sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { billingCharges } from "../../db/schema/index.ts";
import { testConfig } from "../testing/db.ts";

/** Test support: a config with billing on (the Stripe keys it requires are placeholders nothing calls). */
export function billingOnConfig(overrides: Record<string, string> = {}) {
  return testConfig({
    RETASC_BILLING: "on",
    STRIPE_SECRET_KEY: "sk_test_placeholder",
    STRIPE_WEBHOOK_SECRET: "whsec_placeholder",
    PUBLIC_URL: "https://retasc.example.com",
    ...overrides,
  });
}

/** The org's ledger, oldest first. */
export async function ledgerOf(db: Db, orgId: string) {
  return db.select().from(billingCharges).where(eq(billingCharges.orgId, orgId)).orderBy(billingCharges.id);
}

export async function ledgerTotal(db: Db, orgId: string, tool?: string): Promise<number> {
  const rows = await db
    .select({ total: sql<string>`coalesce(sum(${billingCharges.microCredits}), 0)` })
    .from(billingCharges)
    .where(tool ? and(eq(billingCharges.orgId, orgId), eq(billingCharges.tool, tool)) : eq(billingCharges.orgId, orgId));
  return Number(rows[0]!.total);
}

/** Leaves the org exactly `microCredits` of given credit (a test drain or top-up through the credit function). */
export async function setBalance(db: Db, orgId: string, microCredits: number, ref = crypto.randomUUID()) {
  const [row] = await query<{ total: string }>(
    db,
    sql`select coalesce(sum(given_remaining + bought_remaining), 0) as total from billing_credit_slices where org_id = ${orgId}`,
  );
  const delta = microCredits - Number(row!.total);
  if (delta === 0) return;
  await query(
    db,
    sql`select retasc_add_credit(${orgId}::text, 'given', ${delta}::bigint, 'test', ${ref}::text, 'test balance', now())`,
  );
}
