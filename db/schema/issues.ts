import { sql } from "drizzle-orm";
import { boolean, foreignKey, index, integer, pgTable, smallint, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { user } from "./auth.ts";
import { dispatchIndexOrder, isOpen, leased, unleased } from "./dispatch.ts";
import { issueStatuses } from "../../constants/statuses.ts";
import { changeTypes } from "../../constants/change-types.ts";
import { orgIdColumn, projects } from "./orgs.ts";

export { issueStatuses, type IssueStatus } from "../../constants/statuses.ts";
export const slaStates = ["none", "ok", "warning", "breaching", "breached"] as const;
export type SlaState = (typeof slaStates)[number];
export const verificationStates = ["pending", "passed", "failed"] as const;
export type VerificationState = (typeof verificationStates)[number];

/**
 * Issues. Content columns (`*_enc`) hold ciphertext under the org's data key.
 * The ranking columns (own/effective level, effective deadline, open blockers, SLA)
 * are maintained incrementally by server/issues/ranking.ts so a claim is an index scan.
 * The live lease is mirrored here (lease_token_hash, lease_expires_at) so dispatch
 * filters on one row; the history of leases is in `leases`.
 */
export const issues = pgTable(
  "issues",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    projectId: text("project_id").notNull(),
    number: integer("number").notNull(),
    identifier: text("identifier").notNull(),
    titleEnc: text("title_enc").notNull(),
    bodyEnc: text("body_enc"),
    noDependencyEnc: text("no_dependency_enc"),
    cancelReasonEnc: text("cancel_reason_enc"),
    work: boolean("work").notNull(),
    /** The Conventional Commits type an agent's create declared (decision 059); null: filed before, imported, or a person left it out. */
    changeType: text("change_type", { enum: changeTypes }),
    status: text("status", { enum: issueStatuses }).notNull().default("todo"),
    priority: smallint("priority").notNull().default(0),
    assigneeId: text("assignee_id").references(() => user.id, { onDelete: "set null" }),
    parentId: text("parent_id"),
    authorId: text("author_id").references(() => user.id, { onDelete: "set null" }),
    /** The human principal whose work went into review; never its reviewer. */
    submitterId: text("submitter_id"),
    /** When the issue last entered review: its age floor counts from here while it is in review (decision 073). */
    reviewSince: timestamp("review_since", { withTimezone: true }),
    dueAt: timestamp("due_at", { withTimezone: true }),
    dueSetAt: timestamp("due_set_at", { withTimezone: true }),
    ownLevel: smallint("own_level").notNull().default(0),
    effectiveLevel: smallint("effective_level").notNull().default(0),
    effectiveDueAt: timestamp("effective_due_at", { withTimezone: true }),
    openBlockerCount: integer("open_blocker_count").notNull().default(0),
    slaState: text("sla_state", { enum: slaStates }).notNull().default("none"),
    /** When time next moves this issue across an SLA threshold; the SLA sweep reads it. */
    slaNextAt: timestamp("sla_next_at", { withTimezone: true }),
    fence: integer("fence").notNull().default(0),
    leaseId: text("lease_id"),
    leaseTokenHash: text("lease_token_hash"),
    leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true }),
    /**
     * What the dispatch indexes read of the lease instead of its expiry (decision 097): null exactly
     * when lease_expires_at is, never after it, moved by a renewal only once it is within half a
     * lease of now, so most renewals change no indexed column and are HOT. Kept by a trigger
     * (retasc_lease_check_at, migration 0062): no writer sets it.
     */
    leaseCheckAt: timestamp("lease_check_at", { withTimezone: true }),
    /** Set once the issue is first claimed: the Dash's Backlog / Active split. */
    firstClaimedAt: timestamp("first_claimed_at", { withTimezone: true }),
    /**
     * The branch fixed at the first claim, stored once the title it came from changes (the
     * slug needs the plaintext title, which only the server holds); null: the title's slug.
     */
    branch: text("branch"),
    /** Intake: "pending" while an outsider's issue waits for a member to accept it (never dispatched); null for the team's own. */
    triage: text("triage", { enum: ["pending", "accepted"] }),
    /**
     * CI's word on the last finish in a project with verification on: "pending" holds every
     * dependent back (it still counts in their open_blocker_count), "passed" lets them go,
     * "failed" reopened the issue. Null: never verified (decision 045).
     */
    verification: text("verification", { enum: verificationStates }),
    /** When verification last changed. */
    verificationAt: timestamp("verification_at", { withTimezone: true }),
    /** When a pending verification reads stale: the finish plus the project's window. */
    verificationStaleAt: timestamp("verification_stale_at", { withTimezone: true }),
    /** What the finisher said it delivered (save_issue's evidence); CI results are matched on these. */
    evidenceCommit: text("evidence_commit"),
    evidenceBranch: text("evidence_branch"),
    evidencePr: text("evidence_pr"),
    /**
     * The run of claims abandoned in a row (lapsed or released, no checkpoint written under
     * them) and the fence of the last one counted: retasc_abandoned_claim's, decision 055.
     */
    abandonedClaims: integer("abandoned_claims").notNull().default(0),
    abandonedFence: integer("abandoned_fence").notNull().default(0),
    /** Set when that run reached the project's threshold: blocked until a person releases it. */
    quarantinedAt: timestamp("quarantined_at", { withTimezone: true }),
    quarantineReason: text("quarantine_reason"),
    /**
     * Which sections of the issue's view may hold rows, one bit each (relations 1, labels 2,
     * children 4, checkpoints 8, comments 16, attachments 32): a trigger sets a bit with the first
     * such row and nothing clears it, so a clear bit means the view skips that read (decision 119,
     * migration 0085). Issues filed before it start with every bit set.
     */
    viewExtras: smallint("view_extras").notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("issues_project_number_uq").on(t.projectId, t.number),
    uniqueIndex("issues_org_identifier_uq").on(t.orgId, t.identifier),
    // What a pick reads (decision 076): the dispatch order over unleased candidates only, so a
    // pick never walks held work; lapsed leases, few until swept, come from the held index by expiry,
    // which also tells an empty poll when the next lease lapses.
    // They read lease_check_at, not the expiry, so a renewal is a HOT update (decision 097).
    index("issues_unleased_idx")
      .on(t.projectId, ...dispatchIndexOrder(t))
      .where(unleased(t))
      .concurrently(),
    index("issues_org_unleased_idx")
      .on(t.orgId, ...dispatchIndexOrder(t))
      .where(unleased(t))
      .concurrently(),
    index("issues_lease_check_idx").on(t.orgId, t.leaseCheckAt).where(leased(t)).concurrently(),
    // An empty poll counts what awaits triage without reading the open issues.
    index("issues_triage_pending_idx")
      .on(t.orgId, t.projectId)
      .where(sql`${t.triage} = 'pending' and ${isOpen(t.status)}`)
      .concurrently(),
    // The Dash's queue: the whole org in dispatch order, every status (its filters narrow it),
    // so a page is an index range read instead of a sort of the org's issues.
    index("issues_org_dispatch_idx").on(t.orgId, ...dispatchIndexOrder(t)),
    index("issues_sla_next_idx").on(t.projectId, t.slaNextAt).where(sql`${t.slaNextAt} is not null`),
    // Every live lease by when it may lapse: the stall sweep.
    index("issues_lease_check_at_idx")
      .on(t.leaseCheckAt)
      .where(sql`${t.leaseCheckAt} is not null`)
      .concurrently(),
    // Children by parent: only issues that have one (most have none), so the claim's, finish's and
    // heartbeat's row versions add no entry here (decision 097).
    index("issues_children_idx").on(t.parentId).where(sql`${t.parentId} is not null`).concurrently(),
    // CI results find the finishes awaiting them by commit or branch.
    index("issues_evidence_commit_idx").on(t.orgId, t.evidenceCommit).where(sql`${t.evidenceCommit} is not null`),
    index("issues_evidence_branch_idx").on(t.orgId, t.evidenceBranch).where(sql`${t.evidenceBranch} is not null`),
    // An org's blocked or canceled issues (few among many): the lists' and the quarantine's status
    // filters. Open statuses read issues_org_open_idx, done ones the queue order; a claim or a
    // finish (todo, doing, review, done) adds no entry here (decision 104).
    index("issues_org_blocked_canceled_idx")
      .on(t.orgId, t.status)
      .where(sql`${t.status} in ('blocked', 'canceled')`)
      .concurrently(),
    // The finishes awaiting CI: the stale sweep and the Fleet read those past their window (decision 062).
    index("issues_verification_pending_idx").on(t.verificationStaleAt).where(sql`${t.verification} = 'pending'`),
    // An org's (or project's) open issues, whatever has finished: the forecast, queue_status and
    // the Fleet page read these, and a new org the statistics do not know yet is planned as one row,
    // which on (org_id, status) meant reading every finished issue too.
    index("issues_org_open_idx").on(t.orgId, t.projectId).where(isOpen(t.status)),
    // What the foreign keys of other org tables to an issue reference: org_id paired with org_id (decision 112).
    uniqueIndex("issues_org_id_uq").on(t.orgId, t.id).concurrently(),
    foreignKey({ name: "issues_org_project_id_fk", columns: [t.orgId, t.projectId], foreignColumns: [projects.orgId, projects.id] }).onDelete("cascade"),
  ],
);

export const checkConclusions = ["success", "failure", "pending"] as const;
export type CheckConclusion = (typeof checkConclusions)[number];

/**
 * Each CI result for an issue's finish, as reported (a connector's webhook, a CI key's
 * attestation, a person on the Dash). The latest per check decides (server/verification).
 */
export const verificationReports = pgTable(
  "verification_reports",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    issueId: text("issue_id").notNull(),
    commit: text("commit"),
    check: text("check").notNull(),
    conclusion: text("conclusion", { enum: checkConclusions }).notNull(),
    url: text("url"),
    /** github, gitlab, attested (a CI key), person (by hand on the Dash). */
    source: text("source").notNull(),
    actorId: text("actor_id"),
    keyId: text("key_id"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    index("verification_reports_issue_idx").on(t.issueId, t.createdAt),
    foreignKey({ name: "verification_reports_org_issue_id_fk", columns: [t.orgId, t.issueId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
  ],
);

export const relationTypes = ["blocks", "related", "duplicate"] as const;
export type StoredRelationType = (typeof relationTypes)[number];

/** `blocks` edges are dispatch edges: source blocks target. `blocked_by` is stored reversed. */
export const relations = pgTable(
  "relations",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    sourceId: text("source_id").notNull(),
    targetId: text("target_id").notNull(),
    type: text("type", { enum: relationTypes }).notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("relations_edge_uq").on(t.sourceId, t.targetId, t.type),
    index("relations_target_idx").on(t.targetId, t.type),
    foreignKey({ name: "relations_org_source_id_fk", columns: [t.orgId, t.sourceId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
    foreignKey({ name: "relations_org_target_id_fk", columns: [t.orgId, t.targetId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
  ],
);
