import { customType, foreignKey, integer, pgTable, text } from "drizzle-orm/pg-core";
import { attachments } from "./issue-parts.ts";
import { orgIdColumn } from "./orgs.ts";

/** bytea as a Buffer (postgres.js hands back a Buffer, PGlite a Uint8Array). */
export const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => "bytea",
  fromDriver: (value) => Buffer.from(value),
});

/**
 * The content of a file attachment. The file is an `attachments` row like a link (its url the
 * Dash download path, its title the filename), so list, get and obsolete treat both kinds
 * alike; this row adds the bytes. `content_enc` is the file sealed under the org's data key
 * (OrgCipher.encryptBytes); the filename is in `attachments.title_enc`. The content type is the
 * one sniffed from the bytes at upload, never the uploader's claim.
 */
export const attachmentFiles = pgTable(
  "attachment_files",
  {
    attachmentId: text("attachment_id").primaryKey(),
    orgId: orgIdColumn(),
    contentType: text("content_type").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    contentEnc: bytea("content_enc").notNull(),
  },
  (t) => [
    foreignKey({ name: "attachment_files_org_attachment_id_fk", columns: [t.orgId, t.attachmentId], foreignColumns: [attachments.orgId, attachments.id] }).onDelete("cascade"),
  ],
);
