/** What hangs on an issue: its comments, its labels (the org's, and which issues carry them) and its attachments. */
import { sql } from "drizzle-orm";
import { check, foreignKey, index, pgTable, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { issues } from "./issues.ts";
import { orgIdColumn } from "./orgs.ts";

export const comments = pgTable(
  "comments",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    issueId: text("issue_id").notNull(),
    parentId: text("parent_id"),
    authorId: text("author_id"),
    keyId: text("key_id"),
    runtime: text("runtime"),
    bodyEnc: text("body_enc").notNull(),
    retractedAt: timestamp("retracted_at", { withTimezone: true }),
    retractNoteEnc: text("retract_note_enc"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    index("comments_issue_idx").on(t.issueId, t.createdAt),
    uniqueIndex("comments_org_id_uq").on(t.orgId, t.id).concurrently(),
    foreignKey({ name: "comments_org_issue_id_fk", columns: [t.orgId, t.issueId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
  ],
);

export const labels = pgTable(
  "labels",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    name: text("name").notNull(),
    color: text("color"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("labels_org_name_uq").on(t.orgId, t.name)],
);

export const issueLabels = pgTable(
  "issue_labels",
  {
    /**
     * The issue's org (decision 099): set by every insert, and by a trigger for a row written
     * without it (an instance of the previous version). Null only in rows older than migration
     * 0071 until their backfill; `issue_labels_org_id_present` (NOT VALID) holds every new row.
     */
    orgId: text("org_id"),
    issueId: text("issue_id")
      .notNull()
      .references(() => issues.id, { onDelete: "cascade" }),
    labelId: text("label_id")
      .notNull()
      .references(() => labels.id, { onDelete: "cascade" }),
  },
  (t) => [
    primaryKey({ columns: [t.issueId, t.labelId] }),
    index("issue_labels_label_idx").on(t.labelId),
    check("issue_labels_org_id_present", sql`${t.orgId} is not null`),
    // The rows sweep.issue-labels-org has still to fill (decision 099); empty once it has.
    index("issue_labels_org_missing_idx").on(t.issueId).where(sql`${t.orgId} is null`).concurrently(),
  ],
);

export const attachments = pgTable(
  "attachments",
  {
    id: text("id").primaryKey(),
    orgId: orgIdColumn(),
    issueId: text("issue_id").notNull(),
    urlEnc: text("url_enc").notNull(),
    titleEnc: text("title_enc"),
    authorId: text("author_id"),
    keyId: text("key_id"),
    obsoletedAt: timestamp("obsoleted_at", { withTimezone: true }),
    obsoleteReasonEnc: text("obsolete_reason_enc"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    index("attachments_issue_idx").on(t.issueId),
    uniqueIndex("attachments_org_id_uq").on(t.orgId, t.id).concurrently(),
    foreignKey({ name: "attachments_org_issue_id_fk", columns: [t.orgId, t.issueId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
  ],
);
