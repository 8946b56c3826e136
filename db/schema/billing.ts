import { sql } from "drizzle-orm";
import { bigint, bigserial, check, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { orgIdColumn } from "./orgs.ts";

/**
 * Credit accounting (docs/decisions/016-credit-slices.md). An org's credit is held in
 * BILLING_SLICES rows so concurrent charges of one org lock different rows: a charge takes
 * one slice that covers it (given credit first), skipping slices other charges hold. Every
 * change of a slice runs under its row lock and the checks keep it at zero or above, so the
 * balance never goes below zero whatever the concurrency. The rule itself is one SQL
 * function, retasc_charge (db/migrations/0009_billing_functions.sql).
 */
export const BILLING_SLICES = 16;

/** One org's credit, split: the sum over its slices is the balance. Month spend is kept per slice too (the cap reads the sum). */
export const billingCreditSlices = pgTable(
  "billing_credit_slices",
  {
    orgId: orgIdColumn(),
    slice: integer("slice").notNull(),
    givenRemaining: bigint("given_remaining", { mode: "number" }).notNull().default(0),
    boughtRemaining: bigint("bought_remaining", { mode: "number" }).notNull().default(0),
    /** The month (its first instant, in the org's time zone) monthSpent counts. */
    monthStart: timestamp("month_start", { withTimezone: true }),
    monthSpent: bigint("month_spent", { mode: "number" }).notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.orgId, t.slice] }),
    check("billing_credit_slices_nonnegative", sql`${t.givenRemaining} >= 0 and ${t.boughtRemaining} >= 0`),
  ],
);

/** Per-org billing settings. No row: no cap. */
export const billingAccounts = pgTable("billing_accounts", {
  orgId: orgIdColumn().primaryKey(),
  /** Monthly spend cap in micro-credits; null = none. */
  monthlyCapMicroCredits: bigint("monthly_cap_micro_credits", { mode: "number" }),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

export const creditKinds = ["given", "bought"] as const;
export type CreditKind = (typeof creditKinds)[number];

/**
 * Credit added (given: signup, support grants; bought: purchases) and taken back (a refund or
 * dispute of bought credit: a negative row). Idempotent on (org, source, ref); the signup
 * credit is once per person (its ref is the person's id) across orgs.
 */
export const billingCredits = pgTable(
  "billing_credits",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    orgId: orgIdColumn(),
    kind: text("kind", { enum: creditKinds }).notNull(),
    microCredits: bigint("micro_credits", { mode: "number" }).notNull(),
    source: text("source").notNull(),
    ref: text("ref").notNull(),
    note: text("note"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    uniqueIndex("billing_credits_ref_uq").on(t.orgId, t.source, t.ref),
    uniqueIndex("billing_credits_signup_uq").on(t.ref).where(sql`${t.source} = 'signup'`),
  ],
);

/** One row per charged write: who (person, key, runtime), through which tool, at which tier, for which issue. */
export const billingCharges = pgTable(
  "billing_charges",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    orgId: orgIdColumn(),
    userId: text("user_id"),
    keyId: text("key_id"),
    runtime: text("runtime"),
    tool: text("tool").notNull(),
    tier: text("tier").notNull(),
    microCredits: bigint("micro_credits", { mode: "number" }).notNull(),
    issueId: text("issue_id"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("billing_charges_org_idx").on(t.orgId, t.createdAt, t.id), index("billing_charges_user_idx").on(t.orgId, t.userId, t.createdAt)],
);
