import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { user } from "./auth.ts";
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
    createdBy: text("created_by").references(() => user.id, { onDelete: "set null" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    revokedBy: text("revoked_by").references(() => user.id, { onDelete: "set null" }),
  },
  (t) => [index("connectors_org_idx").on(t.orgId)],
);
