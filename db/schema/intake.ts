import { boolean, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { user } from "./auth.ts";
import { comments, issues } from "./issues.ts";
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
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
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
  (t) => [index("connectors_org_idx").on(t.orgId)],
);

/**
 * Verified webhook deliveries, one row per provider delivery id (GitHub's X-GitHub-Delivery,
 * GitLab's X-Gitlab-Event-UUID): a redelivery finds its row and adds nothing. The payload is
 * outside text, so it is encrypted under the org's key; the processing job reads it from here
 * (outbox payloads carry ids only).
 */
export const intakeDeliveries = pgTable(
  "intake_deliveries",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    connectorId: text("connector_id")
      .notNull()
      .references(() => connectors.id, { onDelete: "cascade" }),
    deliveryId: text("delivery_id").notNull(),
    /** X-GitHub-Event or X-Gitlab-Event. */
    event: text("event").notNull(),
    payloadEnc: text("payload_enc").notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull().defaultNow(),
    processedAt: timestamp("processed_at", { withTimezone: true }),
  },
  (t) => [uniqueIndex("intake_deliveries_delivery_uq").on(t.connectorId, t.deliveryId)],
);

/** A source issue and the Retasc issue it became: the key that makes intake effect-once. */
export const intakeLinks = pgTable(
  "intake_links",
  {
    connectorId: text("connector_id")
      .notNull()
      .references(() => connectors.id, { onDelete: "cascade" }),
    /** The provider's issue id (stable across transfers and renames). */
    sourceId: text("source_id").notNull(),
    /** The issue's number (GitHub) or iid (GitLab) in its repository: what the write-back addresses. */
    sourceNumber: integer("source_number").notNull(),
    orgId: orgIdColumn(),
    issueId: text("issue_id")
      .notNull()
      .references(() => issues.id, { onDelete: "cascade" }),
    /** False once the source is closed or deleted there: nothing is written back to it. */
    sourceOpen: boolean("source_open").notNull().default(true),
    /** An issue, or a pull/merge request (its review item is never written back). */
    kind: text("kind", { enum: ["issue", "pull_request"] }).notNull().default("issue"),
  },
  (t) => [primaryKey({ columns: [t.connectorId, t.sourceId] }), uniqueIndex("intake_links_issue_uq").on(t.issueId)],
);

/** A source comment and the Retasc comment it became. */
export const intakeComments = pgTable(
  "intake_comments",
  {
    connectorId: text("connector_id")
      .notNull()
      .references(() => connectors.id, { onDelete: "cascade" }),
    sourceId: text("source_id").notNull(),
    commentId: text("comment_id")
      .notNull()
      .references(() => comments.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.connectorId, t.sourceId] })],
);
