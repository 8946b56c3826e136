import { sql } from "drizzle-orm";
import { foreignKey, index, integer, pgTable, primaryKey, real, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { bytea } from "./attachment-files.ts";
import { user } from "./auth.ts";
import { orgIdColumn, projects } from "./orgs.ts";

export const linearImportPhases = ["fetching", "applying", "linking", "done", "failed"] as const;
export type LinearImportPhase = (typeof linearImportPhases)[number];

/**
 * One Linear import (server/transfer/linear). At most one unfinished run per org: a unique
 * index, so two starts racing cannot both win. The Linear key is never here: the process that
 * holds it stages pages (linear_import_pages) and the outbox job applies them.
 */
export const linearImportRuns = pgTable(
  "linear_import_runs",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    projectId: text("project_id").notNull(),
    /** The source read (linear, jira, csv): every source's runs share this table and the apply (decision 047). */
    source: text("source").notNull().default("linear"),
    /** What was read: a Linear team, a Jira project, a CSV file's digest. */
    teamId: text("team_id").notNull(),
    /** The source's prefix (a Linear team's key, a Jira project's key; empty for CSV): numbers are kept when it is the project's. */
    teamKey: text("team_key").notNull(),
    startedBy: text("started_by"),
    phase: text("phase", { enum: linearImportPhases }).notNull().default("fetching"),
    /** Issues fetched (fetching) or applied (applying, linking); `total` is the team's issue count. */
    done: integer("done").notNull().default(0),
    total: integer("total").notNull().default(0),
    pagesFetched: integer("pages_fetched").notNull().default(0),
    pagesApplied: integer("pages_applied").notNull().default(0),
    /** Until when the source asked the fetcher to wait (a 429's Retry-After), shown on the run; null when not waiting. */
    waitUntil: timestamp("wait_until", { withTimezone: true }),
    /** The fetcher's last sign of life: a run fetching with a stale one lost its key with its process. */
    fetchHeartbeatAt: timestamp("fetch_heartbeat_at", { withTimezone: true }),
    /** What the run counted: created, updated, unchanged (issues), comments, ghosts. */
    counts: text("counts"),
    /** A coded reason, never content or a secret. */
    error: text("error"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("linear_import_runs_one_live_uq").on(t.orgId).where(sql`${t.phase} in ('fetching', 'applying', 'linking')`),
    index("linear_import_runs_org_idx").on(t.orgId, t.createdAt),
    uniqueIndex("linear_import_runs_org_id_uq").on(t.orgId, t.id).concurrently(),
    foreignKey({ name: "linear_import_runs_org_project_id_fk", columns: [t.orgId, t.projectId], foreignColumns: [projects.orgId, projects.id] }).onDelete("cascade"),
  ],
);

/** A fetched page of issues, encrypted under the org's key, until its run finishes. */
export const linearImportPages = pgTable(
  "linear_import_pages",
  {
    runId: text("run_id").notNull(),
    seq: integer("seq").notNull(),
    orgId: orgIdColumn(),
    payloadEnc: text("payload_enc").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.seq] }),
    foreignKey({ name: "linear_import_pages_org_run_id_fk", columns: [t.orgId, t.runId], foreignColumns: [linearImportRuns.orgId, linearImportRuns.id] }).onDelete("cascade"),
  ],
);

export const linearLinkKinds = ["issue", "comment", "attachment", "relation", "label"] as const;

/**
 * Linear id → Retasc id per org: what a re-import reconciles on. `hash` is the digest of the
 * imported fields as last written, so an unchanged item is recognised without touching it.
 */
export const linearLinks = pgTable(
  "linear_links",
  {
    orgId: orgIdColumn(),
    linearId: text("linear_id").notNull(),
    kind: text("kind", { enum: linearLinkKinds }).notNull(),
    retascId: text("retasc_id").notNull(),
    hash: text("hash").notNull(),
    /** Linear's estimate (points), which Retasc's issues have no column for. */
    estimate: real("estimate"),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.linearId] }), index("linear_links_retasc_idx").on(t.retascId)],
);

/**
 * Placeholder ("ghost") members: a person an import names (author, assignee) who is not known
 * to be anyone here. Each has a placeholder user row (no sign-in, an address nobody receives)
 * that history points at until the person whose verified email matches claims it.
 */
export const importGhosts = pgTable(
  "import_ghosts",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    source: text("source").notNull(),
    sourceUserId: text("source_user_id").notNull(),
    userId: text("user_id")
      .notNull()
      .references(() => user.id, { onDelete: "cascade" }),
    /** The source's email, encrypted; `email_hash` (SHA-256 of it lowercased) finds a person's ghosts. */
    emailEnc: text("email_enc"),
    emailHash: text("email_hash"),
    claimedBy: text("claimed_by").references(() => user.id, { onDelete: "set null" }),
    claimedAt: timestamp("claimed_at", { withTimezone: true }),
    /** The people who said this placeholder is not them (dismiss_ghost_prompt): it is offered to them no more. */
    dismissedBy: text("dismissed_by").array().notNull().default(sql`'{}'::text[]`),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("import_ghosts_source_uq").on(t.orgId, t.source, t.sourceUserId),
    index("import_ghosts_email_idx").on(t.emailHash),
  ],
);

/**
 * A file attachment downloaded while its run was fetching (by the process holding the source's
 * credential), sealed under the org's key (OrgCipher.encryptBytes) until the apply copies it to
 * `attachment_files` in the page's transaction and drops it (decision 060).
 */
export const importStagedFiles = pgTable(
  "import_staged_files",
  {
    runId: text("run_id").notNull(),
    /** The source's attachment id, as the staged page names it. */
    sourceId: text("source_id").notNull(),
    orgId: orgIdColumn(),
    contentType: text("content_type").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    contentEnc: bytea("content_enc").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.sourceId] }),
    foreignKey({ name: "import_staged_files_org_run_id_fk", columns: [t.orgId, t.runId], foreignColumns: [linearImportRuns.orgId, linearImportRuns.id] }).onDelete("cascade"),
  ],
);

/**
 * A source's credential an owner or admin asked to keep, to import the same team or project
 * again later without pasting it (decision 094): sealed under the org's key, never returned by
 * any read, removed by `forgetImportCredential` and with the org. One per source and what it
 * reads (`source_id`, as `linear_import_runs.team_id`). `mapping` is the owner's status and
 * priority mapping of that import, not a secret.
 */
export const importCredentials = pgTable(
  "import_credentials",
  {
    orgId: orgIdColumn(),
    source: text("source").notNull(),
    sourceId: text("source_id").notNull(),
    credentialEnc: text("credential_enc").notNull(),
    mapping: text("mapping"),
    keptBy: text("kept_by").references(() => user.id, { onDelete: "set null" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    usedAt: timestamp("used_at", { withTimezone: true }),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.source, t.sourceId] })],
);
