import { sql } from "drizzle-orm";
import { boolean, foreignKey, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { user } from "./auth.ts";

export const orgs = pgTable("orgs", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  timeZone: text("time_zone").notNull().default("UTC"),
  /** The owner lets admins export the org (decision 043); exporting is otherwise the owners'. */
  adminsMayExport: boolean("admins_may_export").notNull().default(false),
  /**
   * Set while the org moves to another stack (decisions 107, 110): every write of its rows answers
   * ORG_FROZEN (503, Retry-After) until an operator unfreezes it on the stack it moved to.
   */
  frozenAt: timestamp("frozen_at", { withTimezone: true }),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/** The org a row belongs to: deleting the org deletes its rows (org_id, not null, cascading). */
export function orgIdColumn() {
  return text("org_id")
    .notNull()
    .references(() => orgs.id, { onDelete: "cascade" });
}

/**
 * The org of a row that every claim, finish or first heartbeat inserts (`leases`, `activity`):
 * not null, but with no foreign key. Checking one takes a key-share lock on the org's row in each
 * of those transactions: 54 B of WAL each, and a MultiXact on that row once two transactions of
 * one org overlap (decision 109). The writers take the org from the caller's principal or from
 * the row; the org's purge (server/orgs/purge.ts) empties these tables by `org_id` like
 * every other table, and a lease still goes with its issue (its `issue_id` cascades).
 */
export function unlockedOrgIdColumn() {
  return text("org_id").notNull();
}

/** One wrapped data key per org and version. Deleting these rows crypto-shreds the org. */
export const orgKeys = pgTable(
  "org_keys",
  {
    orgId: orgIdColumn(),
    version: integer("version").notNull(),
    wrappedKey: text("wrapped_key").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.version] })],
);

export const memberRoles = ["owner", "admin", "member"] as const;
export type MemberRole = (typeof memberRoles)[number];
export const memberStatuses = ["active", "suspended"] as const;

export const members = pgTable(
  "members",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    userId: text("user_id")
      .notNull()
      .references(() => user.id, { onDelete: "cascade" }),
    role: text("role", { enum: memberRoles }).notNull().default("member"),
    status: text("status", { enum: memberStatuses }).notNull().default("active"),
    /**
     * The projects a member (role `member`) and their agents see, or null for all of them.
     * Owners and admins are never scoped (decision 042; server/orgs/scope.ts reads it).
     */
    projectIds: text("project_ids").array(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("members_org_user_uq").on(t.orgId, t.userId)],
);

export const verificationModes = ["off", "ci"] as const;
export type VerificationMode = (typeof verificationModes)[number];

export const projects = pgTable(
  "projects",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    name: text("name").notNull(),
    prefix: text("prefix").notNull(),
    /** Next issue number; taken with UPDATE ... RETURNING so numbering never gaps or collides. */
    nextNumber: integer("next_number").notNull().default(1),
    /** "ci": a finish needs evidence and its dependents wait for CI to pass it (docs/reliability.md, decision 045). */
    verificationMode: text("verification_mode", { enum: verificationModes }).notNull().default("off"),
    /** The checks a finish must pass; empty: every check reported on the commit. */
    verificationChecks: jsonb("verification_checks").$type<string[]>().notNull().default([]),
    /** How long a verification may stay pending before it reads stale. */
    verificationWindowMinutes: integer("verification_window_minutes").notNull().default(120),
    /** A live claim with no checkpoint, comment or status write for this long reads stalled (check_claim). */
    stallMinutes: integer("stall_minutes").notNull().default(45),
    /** Claims abandoned in a row (lapsed or released, no checkpoint) after which an issue is quarantined (decision 055). */
    quarantineAfter: integer("quarantine_after").notNull().default(3),
    /** Whether the stall sweep releases a stalled claim (as its holder's release would) instead of only marking it (decision 062). */
    releaseStalled: boolean("release_stalled").notNull().default(false),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("projects_org_prefix_uq").on(t.orgId, t.prefix),
    uniqueIndex("projects_org_id_uq").on(t.orgId, t.id).concurrently(),
  ],
);

/**
 * Prefixes a project had before a rename (decision 089): `OLD-42` still names the issue now
 * `NEW-42`. One prefix names one project of an org, whether current or old, so an old
 * identifier never becomes ambiguous; renaming back to an old prefix takes it out of here.
 * `retasc_identifier` (migration 0055) is the one place an identifier is read through them.
 */
export const projectPrefixAliases = pgTable(
  "project_prefix_aliases",
  {
    orgId: orgIdColumn(),
    prefix: text("prefix").notNull(),
    projectId: text("project_id").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.orgId, t.prefix] }),
    index("project_prefix_aliases_project_idx").on(t.projectId),
    foreignKey({ name: "project_prefix_aliases_org_project_id_fk", columns: [t.orgId, t.projectId], foreignColumns: [projects.orgId, projects.id] }).onDelete("cascade"),
  ],
);

/**
 * Agent keys (`rtsc_...`). Only the SHA-256 of the secret is stored; `prefix` is the
 * visible start shown in lists. A key acts for one human principal in one org.
 */
export const agentKeys = pgTable(
  "agent_keys",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    projectId: text("project_id"),
    userId: text("user_id")
      .notNull()
      .references(() => user.id, { onDelete: "cascade" }),
    runtime: text("runtime").notNull(),
    keyHash: text("key_hash").notNull(),
    prefix: text("prefix").notNull(),
    claimCap: integer("claim_cap"),
    parentKeyId: text("parent_key_id"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    /** When it stops working by itself: session keys only, never after their parent (decision 037). */
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    /** A CI key (`rtci_…`): attests verification results for its project and does nothing else. */
    ci: boolean("ci").notNull().default(false),
    /**
     * A hosted key (`retasc key mint --hosted`): it runs where no watchdog proxy can, so its claim
     * replies tell it that its own calls renew them (server/mcp/footer.ts).
     */
    hosted: boolean("hosted").notNull().default(false),
    /** What its holder calls it (`--name`), shown in key lists; null for none. */
    name: text("name"),
    /** A rider waits in key_riders: read with the key on every call, so a key with none costs no query. */
    riderWaiting: boolean("rider_waiting").notNull().default(false),
  },
  (t) => [
    uniqueIndex("agent_keys_hash_uq").on(t.keyHash),
    index("agent_keys_org_user_idx").on(t.orgId, t.userId),
    index("agent_keys_live_idx").on(t.orgId).where(sql`${t.revokedAt} is null`),
    uniqueIndex("agent_keys_org_id_uq").on(t.orgId, t.id).concurrently(),
    foreignKey({ name: "agent_keys_org_project_id_fk", columns: [t.orgId, t.projectId], foreignColumns: [projects.orgId, projects.id] }).onDelete("set null"),
  ],
);

/**
 * One line a key is told on its next MCP call, once (a finish of its that CI failed). The text
 * is ciphertext under the org's key; delivered rows are deleted.
 */
export const keyRiders = pgTable(
  "key_riders",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    keyId: text("key_id").notNull(),
    textEnc: text("text_enc").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    index("key_riders_key_idx").on(t.keyId, t.createdAt),
    foreignKey({ name: "key_riders_org_key_id_fk", columns: [t.orgId, t.keyId], foreignColumns: [agentKeys.orgId, agentKeys.id] }).onDelete("cascade"),
  ],
);
