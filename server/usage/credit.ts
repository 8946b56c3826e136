import { eq, sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { billingCreditSlices, type CreditKind } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";

export interface CreditEntry {
  orgId: string;
  kind: CreditKind;
  /** Negative: a refund or dispute taking credit of this kind back, as much as is left. */
  microCredits: number;
  /** What the credit came from (signup, grant, stripe, …); with ref, the idempotency key. */
  source: string;
  ref: string;
  note?: string | null;
  at: Date;
}

/**
 * Adds credit once per (org, source, ref), spread over the org's slices (retasc_add_credit),
 * inside the caller's transaction. A second call with the same ref adds nothing.
 */
export async function addCredit(tx: Db, entry: CreditEntry): Promise<{ added: boolean }> {
  if (!Number.isSafeInteger(entry.microCredits)) throw new RangeError("microCredits must be a whole number");
  const [row] = await query<{ added: boolean }>(
    tx,
    sql`select retasc_add_credit(${entry.orgId}::text, ${entry.kind}::text, ${entry.microCredits}::bigint, ${entry.source}::text,
      ${entry.ref}::text, ${entry.note ?? null}::text, ${entry.at.toISOString()}::timestamptz) as added`,
  );
  return { added: Boolean(row!.added) };
}

/**
 * A person's first org starts with BILLING_SIGNUP_CREDIT of given credit, once: the credit's
 * ref is the person, unique across orgs, so a second org (or a race of two) gets none.
 * Without a config (a bare test fixture) there is no credit to grant.
 */
export async function grantSignupCredit(
  tx: Db,
  services: Partial<Pick<Services, "config" | "clock">>,
  orgId: string,
  userId: string,
): Promise<{ added: boolean }> {
  const microCredits = services.config?.BILLING_SIGNUP_CREDIT ?? 0;
  if (microCredits === 0) return { added: false };
  return addCredit(tx, {
    orgId,
    kind: "given",
    microCredits,
    source: "signup",
    ref: userId,
    note: "signup credit",
    at: services.clock?.now() ?? new Date(),
  });
}

/** The org's credit now: given and bought, summed over its slices. */
export async function balanceOf(db: Db, orgId: string) {
  const [row] = await db
    .select({
      given: sql<string>`coalesce(sum(${billingCreditSlices.givenRemaining}), 0)`,
      bought: sql<string>`coalesce(sum(${billingCreditSlices.boughtRemaining}), 0)`,
    })
    .from(billingCreditSlices)
    .where(eq(billingCreditSlices.orgId, orgId));
  const given = Number(row?.given ?? 0);
  const bought = Number(row?.bought ?? 0);
  return { givenMicroCredits: given, boughtMicroCredits: bought, totalMicroCredits: given + bought };
}
