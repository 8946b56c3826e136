import { sql } from "drizzle-orm";
import { bigint, boolean, foreignKey, index, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { issues } from "./issues.ts";
import { orgIdColumn, orgs } from "./orgs.ts";

/**
 * The duplicate gate's term index (decision 066): each issue's title words and its body's first
 * words, normalized, as keyed digests (HMAC under a key derived from the org's data key, first 8
 * bytes), since titles and bodies are ciphertext here. `open` mirrors the issue's status (a trigger
 * on issues keeps it, migration 0044), so only open issues are read as candidates.
 */
export const issueTerms = pgTable(
  "issue_terms",
  {
    orgId: orgIdColumn(),
    issueId: text("issue_id").notNull(),
    term: bigint("term", { mode: "bigint" }).notNull(),
    inTitle: boolean("in_title").notNull(),
    open: boolean("open").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.issueId, t.term] }),
    // A term's open issues, read a few at a time: the lookup stops past the rarity threshold.
    index("issue_terms_open_idx").on(t.orgId, t.term, t.issueId, t.inTitle).where(sql`${t.open}`),
    foreignKey({ name: "issue_terms_org_issue_id_fk", columns: [t.orgId, t.issueId], foreignColumns: [issues.orgId, issues.id] }).onDelete("cascade"),
  ],
);

/**
 * How far sweep.issue-terms has indexed an org's issues written before the index (or by an
 * export's import), in identifier order; `doneAt` set once it reached the end. An org without a
 * row has not been walked yet. Creates, updates and the import pipeline index as they write.
 */
export const issueTermBackfills = pgTable("issue_term_backfills", {
  orgId: text("org_id")
    .primaryKey()
    .references(() => orgs.id, { onDelete: "cascade" }),
  after: text("after").notNull().default(""),
  doneAt: timestamp("done_at", { withTimezone: true }),
});
