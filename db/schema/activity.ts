import { sql } from "drizzle-orm";
import { bigserial, index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { orgs } from "./orgs.ts";

/**
 * Append-only log of every write: who (human principal, key, runtime), what (kind),
 * and encrypted detail. Never updated or deleted except by deleting the org.
 */
export const activity = pgTable(
  "activity",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    orgId: text("org_id")
      .notNull()
      .references(() => orgs.id, { onDelete: "cascade" }),
    issueId: text("issue_id"),
    kind: text("kind").notNull(),
    actorId: text("actor_id"),
    keyId: text("key_id"),
    runtime: text("runtime"),
    detailEnc: text("detail_enc"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    index("activity_issue_idx").on(t.issueId, t.id),
    index("activity_org_idx").on(t.orgId, t.id),
  ],
);

/**
 * Side effects that must survive a crash, written in the same transaction as the change.
 * Payloads carry ids only, never decrypted content. A relay hands rows to the job runner.
 */
export const outbox = pgTable(
  "outbox",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    orgId: text("org_id"),
    job: text("job").notNull(),
    payload: jsonb("payload").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    relayedAt: timestamp("relayed_at", { withTimezone: true }),
    attempts: integer("attempts").notNull().default(0),
  },
  (t) => [index("outbox_pending_idx").on(t.id).where(sql`${t.relayedAt} is null`)],
);
