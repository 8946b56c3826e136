import { sql } from "drizzle-orm";
import { foreignKey, index, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { user } from "./auth.ts";
import { agentKeys, memberRoles, orgIdColumn, projects } from "./orgs.ts";

/**
 * Invites (`rtscinv_...`): single-use codes that add a person to an org, open or bound to an
 * email (decision 028). Only the SHA-256 of the code is stored. The state is derived: accepted, revoked, expired
 * (past `expires_at` while unspent) or pending.
 */
export const invites = pgTable(
  "invites",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    codeHash: text("code_hash").notNull(),
    role: text("role", { enum: memberRoles }).notNull().default("member"),
    /** Who may redeem it (lowercase), or null for an open invite any signed-in holder redeems. */
    email: text("email"),
    /** When this server mailed the link to `email` (SMTP); the mailed link stands in for a verified address. */
    emailedAt: timestamp("emailed_at", { withTimezone: true }),
    /** The projects the member it makes is scoped to (members.project_ids), or null for all. */
    projectIds: text("project_ids").array(),
    createdBy: text("created_by").references(() => user.id, { onDelete: "set null" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    acceptedAt: timestamp("accepted_at", { withTimezone: true }),
    acceptedBy: text("accepted_by").references(() => user.id, { onDelete: "set null" }),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    revokedBy: text("revoked_by").references(() => user.id, { onDelete: "set null" }),
  },
  (t) => [uniqueIndex("invites_code_hash_uq").on(t.codeHash), index("invites_org_idx").on(t.orgId)],
);

/**
 * Setup codes (`rtscsetup_...`): issued in the Dash by a signed-in person, redeemed once
 * by `retasc bind --setup` on a headless machine, which receives an agent key for that
 * person, org and project. Short-lived; only the SHA-256 is stored.
 */
export const setupCodes = pgTable(
  "setup_codes",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    projectId: text("project_id").notNull(),
    userId: text("user_id")
      .notNull()
      .references(() => user.id, { onDelete: "cascade" }),
    runtime: text("runtime").notNull(),
    codeHash: text("code_hash").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }),
    keyId: text("key_id"),
  },
  (t) => [
    uniqueIndex("setup_codes_code_hash_uq").on(t.codeHash),
    index("setup_codes_unused_idx").on(t.orgId).where(sql`${t.usedAt} is null`),
    foreignKey({ name: "setup_codes_org_project_id_fk", columns: [t.orgId, t.projectId], foreignColumns: [projects.orgId, projects.id] }).onDelete("cascade"),
    foreignKey({ name: "setup_codes_org_key_id_fk", columns: [t.orgId, t.keyId], foreignColumns: [agentKeys.orgId, agentKeys.id] }).onDelete("set null"),
  ],
);
