import { and, asc, eq, sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { members, orgs, user } from "../../db/schema/index.ts";
import type { Config } from "../config/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError } from "../errors.ts";
import { meterTiers, rateCard, toolTiers, windDownTools, type MeterTier, type MeteredTool, type TierOf } from "./rate-card.ts";

/**
 * Metering: every accepted write pays its tier in the transaction of the write
 * (docs/decisions/016-credit-slices.md). The rule is one SQL function, retasc_charge
 * (db/migrations/0010_billing_functions.sql); this module hands it the call: who (person,
 * key, runtime), which tool, which tier, which issue. A refusal throws, so the write rolls
 * back with it; a failed write rolls its charge back. Off (RETASC_BILLING=off): nothing here
 * runs.
 */

export const billingEnabled = (config: Pick<Config, "RETASC_BILLING">) => config.RETASC_BILLING === "on";

/** What a write's transaction owes, settled once before it commits: a call pays its highest tier once. */
export interface PendingCharge {
  tool: MeteredTool;
  tier: MeterTier;
  issueId: string | null;
  /** How many of the tier's price the call pays: 1, or a file's started MiB. */
  units?: number;
}

/** The part of a write's transaction metering reads and marks (server/issues WriteScope is one). */
export interface MeterScope {
  tx: Db;
  ctx: Ctx;
  now: Date;
  charge?: PendingCharge;
}

const tierRank = (tier: MeterTier) => meterTiers.length - meterTiers.indexOf(tier);

/**
 * Marks the transaction as owing `tool` at `tier` (its tool's first tier unless told); the
 * highest tier marked wins. Settled by settleCharge before commit (inTransaction does it).
 */
export function meter<T extends MeteredTool>(scope: MeterScope, tool: T, tier?: TierOf<T>, issueId: string | null = null, units = 1): void {
  const charged = (tier ?? toolTiers[tool][0]) as MeterTier;
  const pending = scope.charge;
  if (!pending || tierRank(charged) > tierRank(pending.tier)) scope.charge = { tool, tier: charged, issueId: issueId ?? pending?.issueId ?? null, units };
  else if (!pending.issueId && issueId) pending.issueId = issueId;
}

/** Charges what the transaction owes (nothing when billing is off or nothing was marked); throws the refusal. */
export async function settleCharge(scope: MeterScope): Promise<void> {
  const pending = scope.charge;
  if (!pending) return;
  scope.charge = undefined;
  await chargeNow(scope.tx, scope.ctx, pending, scope.now);
}

/** Charges one write now, inside its transaction; a refusal throws BILLING_INACTIVE or SPEND_CAP. */
export async function chargeNow(tx: Db, ctx: Ctx, charge: PendingCharge, now: Date): Promise<void> {
  if (!billingEnabled(ctx.config) || ctx.principal.kind === "system") return;
  const p = ctx.principal;
  const [row] = await query<{ outcome: string }>(
    tx,
    sql`select retasc_charge(${p.orgId}::text, ${p.userId}::text, ${p.keyId}::text, ${p.runtime}::text, ${charge.tool}::text,
      ${charge.tier}::text, ${rateCard[charge.tier] * (charge.units ?? 1)}::bigint, ${charge.issueId}::text, ${!windDownTools.has(charge.tool)}::boolean,
      ${now.toISOString()}::timestamptz) as outcome`,
  );
  const outcome = row!.outcome;
  if (outcome === "BILLING_INACTIVE" || outcome === "SPEND_CAP") throw await billingRefusal(tx, ctx, outcome);
}

/** Charges an org-level action (a label, a member, key, invite or setup-code action) its tool's tier, inside its transaction. */
export const chargeOrgAction = (tx: Db, ctx: Ctx, tool: MeteredTool): Promise<void> =>
  chargeNow(tx, ctx, { tool, tier: toolTiers[tool][0], issueId: null }, ctx.clock.now());

/** The charge a dispatch function takes itself (retasc_next_issue, retasc_finish): undefined when billing is off. */
export function sqlCharge(ctx: Ctx, tool: MeteredTool, tier: MeterTier) {
  if (!billingEnabled(ctx.config) || ctx.principal.kind === "system") return undefined;
  return { tool, tier, microCredits: rateCard[tier] };
}

export const billingPagePath = "/dash/settings/billing";

/** The Dash billing page on the public origin. PUBLIC_URL is where people reach the app (server/http/origin.ts, which this domain may not import). */
export function billingPageUrl(config: Pick<Config, "PUBLIC_URL" | "PORT">): string {
  const base = config.PUBLIC_URL ? config.PUBLIC_URL.replace(/\/+$/, "") : `http://localhost:${config.PORT}`;
  return `${base}${billingPagePath}`;
}

/**
 * The refusal an agent relays: what happened, and in tellHuman who in the org can buy credit
 * (its active owners, by name and email) and where (the Dash billing page on the public origin).
 */
export async function billingRefusal(db: Db, ctx: Ctx, code: "BILLING_INACTIVE" | "SPEND_CAP"): Promise<DomainError> {
  const orgId = ctx.principal.orgId;
  const [org, owners] = await Promise.all([
    db.select({ name: orgs.name }).from(orgs).where(eq(orgs.id, orgId)),
    db
      .select({ name: user.name, email: user.email })
      .from(members)
      .innerJoin(user, eq(user.id, members.userId))
      .where(and(eq(members.orgId, orgId), eq(members.role, "owner"), eq(members.status, "active")))
      .orderBy(asc(members.createdAt)),
  ]);
  const where = billingPageUrl(ctx.config);
  const who = owners.length > 0 ? owners.map((o) => (o.name && o.name !== o.email ? `${o.name} <${o.email}>` : o.email)).join(", ") : "an owner of the org";
  const orgName = org[0]?.name ?? "this org";
  if (code === "BILLING_INACTIVE") {
    return new DomainError(
      "BILLING_INACTIVE",
      `${orgName} has too little credit for this write`,
      "Stop writing and relay tellHuman to your human. heartbeat, checkpoint and release_issue still work, and reads are free.",
      { billingUrl: where },
      `Retasc: ${orgName} is out of credit, so your agents' writes are refused. An owner (${who}) can buy credit at ${where}.`,
    );
  }
  return new DomainError(
    "SPEND_CAP",
    `${orgName} reached its monthly spend cap`,
    "Stop writing and relay tellHuman to your human. heartbeat, checkpoint and release_issue still work, and reads are free.",
    { billingUrl: where },
    `Retasc: ${orgName} reached this month's spend cap, so your agents' writes are refused until next month. An owner (${who}) can raise or lift the cap at ${where}.`,
  );
}
