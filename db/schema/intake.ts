import { boolean, foreignKey, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { user } from "./auth.ts";
import { comments } from "./issue-parts.ts";
import { issues } from "./issues.ts";
import { orgIdColumn, projects } from "./orgs.ts";

export const connectorProviders = ["github", "gitlab"] as const;
export type ConnectorProvider = (typeof connectorProviders)[number];

/**
 * Intake connectors: a GitHub or GitLab repository whose issues flow into a project.
 * The webhook secret is kept encrypted (HMAC verification needs the secret itself, so
 * a hash would not do); the optional write-back token likewise. Neither ever leaves
 * the server: reads return metadata only. Revoking keeps the row for the audit trail.
 */
export const connectors = pgTable(
  "connectors",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    projectId: text("project_id").notNull(),
    provider: text("provider", { enum: connectorProviders }).notNull(),
    /** `owner/name` on GitHub, the project path on GitLab. */
    repo: text("repo").notNull(),
    /** Self-hosted GitLab base URL; null for the public service. */
    baseUrl: text("base_url"),
    webhookSecretEnc: text("webhook_secret_enc").notNull(),
    tokenEnc: text("token_enc"),
    /** Label given to the issues this connector files. */
    intakeLabel: text("intake_label").notNull().default("support"),
    /** Lets every author's issues through without triage (off: outsiders' issues wait for a member). */
    triageAll: boolean("triage_all").notNull().default(false),
    /** The pull/merge request stream (off by default): outsiders' requests become review items on the reviewer's lane. */
    pullRequests: boolean("pull_requests").notNull().default(false),
    /** The member whose lane review items go to; the stream needs one (server/intake/create.ts). */
    reviewerId: text("reviewer_id").references(() => user.id, { onDelete: "set null" }),
    /** The first verified delivery (GitHub's ping, GitLab's Test): null while the connector is Pending. */
    connectedAt: timestamp("connected_at", { withTimezone: true }),
    lastDeliveryAt: timestamp("last_delivery_at", { withTimezone: true }),
    /** The last failure (processing, or a write-back token the provider refused), a short label; cleared by a success. */
    lastError: text("last_error"),
    lastErrorAt: timestamp("last_error_at", { withTimezone: true }),
    createdBy: text("created_by").references(() => user.id, { onDelete: "set null" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    revokedBy: text("revoked_by").references(() => user.id, { onDelete: "set null" }),
  },
  (t) => [
    index("connectors_org_idx").on(t.orgId),
    uniqueIndex("connectors_org_id_uq").on(t.orgId, t.id).concurrently(),
    foreignKey({ name: "connectors_org_project_id_fk", columns: [t.orgId, t.projectId], foreignColumns: [projects.orgId, projects.id] }).onDelete("cascade"),
  ],
);

/**
 * Verified webhook deliveries, one row per provider delivery id (GitHub's X-GitHub-Delivery,
 * GitLab's X-Gitlab-Event-UUID) and one per content key (what the delivery carries: the event,
 * its action, the object's id and updated_at, the fields intake reads), so a redelivery, or a
 * copy of a signed delivery sent again under a new id, finds its row and adds nothing. The
 * payload is outside text, so it is encrypted under the org's key; the processing job reads it
 * from here (outbox payloads carry ids only).
 */
export const intakeDeliveries = pgTable(
  "intake_deliveries",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    connectorId: text("connector_id").notNull(),
    deliveryId: text("delivery_id").notNull(),
    /**
     * A keyed fingerprint of what the delivery carries (OrgCipher.fingerprint: an HMAC under the
     * org's key, so it confirms no guess of the content); null for a delivery intake ignores or
     * one without an updated_at.
     */
    contentKey: text("content_key"),
    /** X-GitHub-Event or X-Gitlab-Event. */
    event: text("event").notNull(),
    payloadEnc: text("payload_enc").notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull().defaultNow(),
    processedAt: timestamp("processed_at", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("intake_deliveries_delivery_uq").on(t.connectorId, t.deliveryId),
    uniqueIndex("intake_deliveries_content_uq").on(t.connectorId, t.contentKey),
    foreignKey({ name: "intake_deliveries_org_connector_id_fk", columns: [t.orgId, t.connectorId], foreignColumns: [connectors.orgId, connectors.id] }).onDelete("cascade"),
  ],
);

/** A source issue and the Retasc issue it became: the key that makes intake effect-once. */
export const intakeLinks = pgTable(
  "intake_links",
  {
    connectorId: text("connector_id").notNull(),
    /** The provider's issue id (stable across transfers and renames). */
    sourceId: text("source_id").notNull(),
    /** The issue's number (GitHub) or iid (GitLab) in its repository: what the write-back addresses. */
    sourceNumber: integer("source_number").notNull(),
    orgId: orgIdColumn(),
    issueId: text("issue_id").notNull(),
    /** False once the source is closed or deleted there: nothing is written back to it. */
    sourceOpen: boolean("source_open").notNull().default(true),
    /** An issue, or a pull/merge request (its review item is never written back). */
    kind: text("kind", { enum: ["issue", "pull_request"] }).notNull().default("issue"),
    /**
     * The SHA-256 of the title and body a person accepted (server/intake/triage.ts), encrypted:
     * a change of them at the source puts the item back in triage. Null until someone accepts.
     */
    signedDigestEnc: text("signed_digest_enc"),
    /** The source's updated_at of the last event applied: an older one (a replay, a late retry) changes nothing. */
    sourceUpdatedAt: timestamp("source_updated_at", { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.connectorId, t.sourceId] }),
    uniqueIndex("intake_links_issue_uq").on(t.issueId),
    foreignKey({ name: "intake_links_org_connector_id_fk", columns: [t.orgId, t.connectorId], foreignColumns: [connectors.orgId, connectors.id] }).onDelete("cascade"),
    foreignKey({ name: "intake_links_org_issue_id_fk", columns: [t.orgId, t.issueId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
  ],
);

/**
 * A source comment and the Retasc comment it became; null: it was withdrawn (deleted at the
 * source, or discarded by a person) while held, so the same id never comes in again.
 */
export const intakeComments = pgTable(
  "intake_comments",
  {
    /** The connector's org (decision 099; migration 0072 filled the rows before it). */
    orgId: text("org_id").notNull(),
    connectorId: text("connector_id").notNull(),
    sourceId: text("source_id").notNull(),
    commentId: text("comment_id"),
  },
  (t) => [
    primaryKey({ columns: [t.connectorId, t.sourceId] }),
    foreignKey({ name: "intake_comments_org_connector_id_fk", columns: [t.orgId, t.connectorId], foreignColumns: [connectors.orgId, connectors.id] }).onDelete("cascade"),
    foreignKey({ name: "intake_comments_org_comment_id_fk", columns: [t.orgId, t.commentId], foreignColumns: [comments.orgId, comments.id] }).onDelete("cascade"),
  ],
);

/**
 * Outsiders' text that no agent may read until a person releases it (docs/decisions/038):
 * an outsider's issue or request text (`issue`: title and body, one row per source, replaced by
 * a later edit) and an outsider's comment (`comment`: its body as it would be posted, one row
 * per source comment). Encrypted under the org's key; only people's doors read it (the Dash's
 * issue page, `retasc triage`). Accepting writes it into the issue or thread and deletes it.
 */
export const intakeHeld = pgTable(
  "intake_held",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    connectorId: text("connector_id").notNull(),
    issueId: text("issue_id").notNull(),
    kind: text("kind", { enum: ["issue", "comment"] }).notNull(),
    /** The source issue's (kind issue) or the source comment's (kind comment) id. */
    sourceId: text("source_id").notNull(),
    /** JSON: `{ author, title, body }` (issue) or `{ author, body }` (comment); title and body are exactly what accepting writes. */
    textEnc: text("text_enc").notNull(),
    /** Why it is held: filed from outside, or edited at the source after a person accepted it. */
    reason: text("reason", { enum: ["filed", "edited"] }).notNull().default("filed"),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    uniqueIndex("intake_held_source_uq").on(t.connectorId, t.kind, t.sourceId),
    index("intake_held_issue_idx").on(t.issueId),
    index("intake_held_org_idx").on(t.orgId, t.receivedAt),
    foreignKey({ name: "intake_held_org_connector_id_fk", columns: [t.orgId, t.connectorId], foreignColumns: [connectors.orgId, connectors.id] }).onDelete("cascade"),
    foreignKey({ name: "intake_held_org_issue_id_fk", columns: [t.orgId, t.issueId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
  ],
);
