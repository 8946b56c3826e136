import { sql } from "drizzle-orm";
import { bigserial, index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { unlockedOrgIdColumn } from "./orgs.ts";

/**
 * Append-only log of every write: who (human principal, key, runtime), what (kind),
 * plaintext facts and encrypted detail. Never updated, but for a run of heartbeats, one row whose
 * `facts.beats` and `facts.lastAt` each next beat updates in place (server/queue/beat-log.ts,
 * decision 105: no indexed column changes, so HOT); deleted by the org's purge (no foreign key
 * to orgs: decision 109) and past ACTIVITY_RETENTION_DAYS by sweep.activity-retention (decision 077).
 */
export const activity = pgTable(
  "activity",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    orgId: unlockedOrgIdColumn(),
    issueId: text("issue_id"),
    kind: text("kind").notNull(),
    actorId: text("actor_id"),
    keyId: text("key_id"),
    runtime: text("runtime"),
    /** Content of the entry (reasons, notes), encrypted under the org's key. */
    detailEnc: text("detail_enc"),
    /**
     * Lease and status metadata of the entry (fence, statuses, expiry, runtime) in plaintext:
     * values the issues and leases tables already hold in plaintext, so the dispatch functions
     * in the database can write them (docs/decisions/006-dispatch-in-sql-functions.md).
     */
    facts: jsonb("facts").$type<Record<string, unknown>>(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    index("activity_issue_idx").on(t.issueId, t.id),
    index("activity_org_idx").on(t.orgId, t.id),
    // The Fleet page's reclaims over a day or a week (decision 027), without scanning the org's log.
    index("activity_org_reclaimed_idx").on(t.orgId, t.createdAt).where(sql`${t.kind} = 'reclaimed'`),
  ],
);

/**
 * Side effects that must survive a crash, written in the same transaction as the change.
 * Payloads carry ids only, never decrypted content. With Redis, a relay hands rows to BullMQ
 * (`relayed_at`) and the worker marks them `completed_at`/`failed_at`; without Redis the
 * in-process runner executes them straight from this table (`available_at`, `locked_until`).
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
    /** In-process runner: not before this time (retry backoff). */
    availableAt: timestamp("available_at", { withTimezone: true }).notNull().defaultNow(),
    /** In-process runner: held by a runner until then; a crashed runner's rows come back after it. */
    lockedUntil: timestamp("locked_until", { withTimezone: true }),
    completedAt: timestamp("completed_at", { withTimezone: true }),
    failedAt: timestamp("failed_at", { withTimezone: true }),
    /** Error class or domain code of the last failure: never content. */
    lastError: text("last_error"),
  },
  (t) => [
    index("outbox_pending_idx").on(t.id).where(sql`${t.relayedAt} is null`),
    index("outbox_open_idx").on(t.id).where(sql`${t.completedAt} is null and ${t.failedAt} is null`),
    index("outbox_failed_idx").on(t.failedAt).where(sql`${t.failedAt} is not null`),
  ],
);

/**
 * One row per unit of background work that has taken effect: `outbox:<id>` for an outbox job,
 * `<sweep>:<tick>` for a sweep tick. Written in the same transaction as the effect, so a job
 * delivered twice (at-least-once) takes effect once; `runs` counts the deliveries that got here.
 */
export const jobReceipts = pgTable(
  "job_receipts",
  {
    key: text("key").primaryKey(),
    job: text("job").notNull(),
    runs: integer("runs").notNull().default(1),
    result: jsonb("result"),
    /** Error class or domain code when the run failed: never content. */
    error: text("error"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("job_receipts_job_idx").on(t.job, t.createdAt),
    index("job_receipts_error_idx").on(t.createdAt).where(sql`${t.error} is not null`),
  ],
);
