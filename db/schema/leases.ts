/** Leases, every one ever granted, and the checkpoints agents write while they hold one. */
import { sql } from "drizzle-orm";
import { foreignKey, index, integer, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { issues } from "./issues.ts";
import { orgIdColumn, unlockedOrgIdColumn } from "./orgs.ts";

export const leaseEndReasons = ["released", "finished", "expired"] as const;

/** Every lease ever granted; at most one live per issue (mirrored on issues). */
export const leases = pgTable(
  "leases",
  {
    id: text("id").primaryKey(),
    orgId: unlockedOrgIdColumn(),
    issueId: text("issue_id").notNull(),
    fence: integer("fence").notNull(),
    keyId: text("key_id"),
    userId: text("user_id").notNull(),
    runtime: text("runtime").notNull(),
    claimedAt: timestamp("claimed_at", { withTimezone: true }).notNull(),
    heartbeatAt: timestamp("heartbeat_at", { withTimezone: true }).notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    /**
     * What the reclaim sweep's index reads instead of the expiry, as issues.lease_check_at
     * (decision 097): never after expires_at, moved by a renewal only once within half a lease of
     * now, so a renewal is a HOT update. Set on insert by a trigger (migration 0066); each renewal
     * sets it with retasc_renewed_check_at (0079). An update trigger would lock the row before every
     * update of a lease, a finish's end included (decision 109).
     */
    checkAt: timestamp("check_at", { withTimezone: true }),
    endedAt: timestamp("ended_at", { withTimezone: true }),
    endReason: text("end_reason", { enum: leaseEndReasons }),
    /** Set by the reclaim sweep once the expiry is recorded in the activity log. */
    reclaimRecordedAt: timestamp("reclaim_recorded_at", { withTimezone: true }),
    /**
     * The MCP session holding the lease (the unsigned part of its Mcp-Session-Id), or null for a
     * client that sent none. Two agents on one key are two sessions, so two holders (decision 036).
     */
    sessionId: text("session_id"),
    /** SHA-256 of the lease's current claim token (a rebind replaces it): tells a finish retry and a superseded token apart. */
    tokenHash: text("token_hash"),
    /** What renewed the lease last: `heartbeat` (heartbeat, checkpoint, a rebind) or `calls` (its session's own calls). */
    renewedBy: text("renewed_by", { enum: ["heartbeat", "calls"] }),
  },
  (t) => [
    uniqueIndex("leases_issue_fence_uq").on(t.issueId, t.fence),
    // A session's calls renew its live leases: found by the session, live ones only.
    index("leases_session_live_idx").on(t.sessionId).where(sql`${t.endedAt} is null and ${t.sessionId} is not null`),
    index("leases_key_live_idx").on(t.keyId).where(sql`${t.endedAt} is null`),
    index("leases_unrecorded_check_idx")
      .on(t.checkAt)
      .where(sql`${t.endedAt} is null and ${t.reclaimRecordedAt} is null`)
      .concurrently(),
    // The Fleet page's pace: an org's finishes over the last day and week.
    index("leases_org_finished_idx").on(t.orgId, t.endedAt).where(sql`${t.endReason} = 'finished'`),
    foreignKey({ name: "leases_org_issue_id_fk", columns: [t.orgId, t.issueId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
  ],
);

export const checkpoints = pgTable(
  "checkpoints",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    issueId: text("issue_id").notNull(),
    leaseId: text("lease_id"),
    userId: text("user_id"),
    keyId: text("key_id"),
    runtime: text("runtime"),
    doneEnc: text("done_enc"),
    nextEnc: text("next_enc"),
    gotchasEnc: text("gotchas_enc"),
    noteEnc: text("note_enc"),
    branch: text("branch"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    index("checkpoints_issue_idx").on(t.issueId, t.createdAt),
    foreignKey({ name: "checkpoints_org_issue_id_fk", columns: [t.orgId, t.issueId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
  ],
);
