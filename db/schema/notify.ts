import { index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { user } from "./auth.ts";
import { orgIdColumn } from "./orgs.ts";

/** Where a person hears about their work (server/notify). */
export const notifyChannels = ["telegram", "email", "slack", "discord"] as const;
export type NotifyChannel = (typeof notifyChannels)[number];
/** pending: an email address awaiting its confirmation code; broken: the platform refused us (`brokenReason`). */
export const bindingStatuses = ["pending", "active", "broken"] as const;

/**
 * One person's binding to one channel within an org. The address (a Telegram chat id, an email
 * address, a Slack or Discord user and channel) is personal data: ciphertext under the org's key.
 */
export const notifyBindings = pgTable(
  "notify_bindings",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    userId: text("user_id")
      .notNull()
      .references(() => user.id, { onDelete: "cascade" }),
    channel: text("channel", { enum: notifyChannels }).notNull(),
    addressEnc: text("address_enc").notNull(),
    status: text("status", { enum: bindingStatuses }).notNull(),
    brokenReason: text("broken_reason"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("notify_bindings_person_channel_uq").on(t.orgId, t.userId, t.channel)],
);

/**
 * Single-use connect codes (Telegram deep link, Slack and Discord `connect`, the email
 * confirmation), stored as SHA-256 hashes; `attempts` bounds guessing of the 6-digit email code.
 */
export const notifyCodes = pgTable(
  "notify_codes",
  {
    codeHash: text("code_hash").primaryKey(),
    orgId: orgIdColumn(),
    userId: text("user_id")
      .notNull()
      .references(() => user.id, { onDelete: "cascade" }),
    channel: text("channel", { enum: notifyChannels }).notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }),
    attempts: integer("attempts").notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("notify_codes_person_idx").on(t.orgId, t.userId, t.channel)],
);

/** A person's muted event kinds; kept when a binding is removed. */
export const notifyMutes = pgTable(
  "notify_mutes",
  {
    orgId: orgIdColumn(),
    userId: text("user_id")
      .notNull()
      .references(() => user.id, { onDelete: "cascade" }),
    kind: text("kind").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.userId, t.kind] })],
);

export const deliveryStates = ["sending", "retrying", "sent", "muted", "failed", "skipped", "unconfirmed"] as const;

/**
 * One message to one person on one channel: its receipt. `key` is the send job's idempotency
 * key; `sending` is committed just before the platform is called, so a run that finds it left by
 * a dead attempt knows the message may have gone out and does not send it again.
 */
export const notifyDeliveries = pgTable(
  "notify_deliveries",
  {
    key: text("key").primaryKey(),
    orgId: orgIdColumn(),
    userId: text("user_id").notNull(),
    issueId: text("issue_id").notNull(),
    kind: text("kind").notNull(),
    channel: text("channel", { enum: notifyChannels }).notNull(),
    state: text("state", { enum: deliveryStates }).notNull(),
    attempts: integer("attempts").notNull().default(0),
    /** The platform's id for the message (Telegram message id, Slack ts, SMTP message id). */
    providerId: text("provider_id"),
    error: text("error"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    sentAt: timestamp("sent_at", { withTimezone: true }),
  },
  (t) => [index("notify_deliveries_person_idx").on(t.orgId, t.userId, t.createdAt)],
);

/** A Slack workspace installed for an org (OAuth v2); the bot token is ciphertext under the org's key. */
export const notifySlackInstalls = pgTable("notify_slack_installs", {
  orgId: orgIdColumn().primaryKey(),
  teamId: text("team_id").notNull(),
  botTokenEnc: text("bot_token_enc").notNull(),
  installedBy: text("installed_by"),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});
