import { sql } from "drizzle-orm";
import { pgArray, query, type Db } from "../../../db/client.ts";
import { attachments, comments, issues, linearLinks } from "../../../db/schema/index.ts";
import { sha256, type OrgCipher } from "../../crypto/index.ts";
import type { LinkReason } from "./files.ts";
import type { GhostBook } from "./ghosts.ts";
import { insertJson, updateFromProposed } from "./json-rows.ts";

/**
 * What every part of a page's apply shares (./apply.ts, ./apply-children.ts) and the linking
 * pass and dry run read: the page's scope and counts, the links that match source ids to ours
 * (linear_links, which holds every source's), and multi-row writes in chunks.
 */
export interface ApplyScope {
  tx: Db;
  /** The run: its staged files are copied from here. */
  runId: string;
  cipher: OrgCipher;
  orgId: string;
  projectId: string;
  /** The project's prefix: identifiers are `${prefix}-${number}`. */
  prefix: string;
  /** The source's numbers are kept (its prefix is the project's); otherwise new issues take the project's next numbers. */
  keepNumbers: boolean;
  /** The source's name: history says where it came from, comments carry `${source}-import` as runtime. */
  source: string;
  timeZone: string;
  ghosts: GhostBook;
  now: Date;
}

export interface ApplyCounts {
  created: number;
  updated: number;
  unchanged: number;
  comments: number;
  /** Files whose bytes this run copied. */
  filesCopied: number;
  /** Attachments this run read that stay links, and why (../pipeline/files.ts). */
  linksKept: number;
  linkReasons: Partial<Record<LinkReason, number>>;
}

export const noCounts = (): ApplyCounts => ({ created: 0, updated: 0, unchanged: 0, comments: 0, filesCopied: 0, linksKept: 0, linkReasons: {} });

export const digest = (value: unknown) => sha256(JSON.stringify(value));
export const date = (iso: string | null) => (iso ? new Date(iso) : null);
export type Links = Map<string, { retascId: string; hash: string }>;
export type LinkRow = typeof linearLinks.$inferInsert;

/** Rows per statement where every value is a bound parameter: well under PostgreSQL's 65,535. */
const ROWS = 500;

export async function inChunks<T>(rows: T[], write: (chunk: T[]) => Promise<unknown>, size = ROWS): Promise<void> {
  for (let at = 0; at < rows.length; at += size) await write(rows.slice(at, at + size));
}

export async function linksOf(tx: Db, orgId: string, ids: string[]): Promise<Links> {
  const links: Links = new Map();
  if (ids.length === 0) return links;
  // One array parameter, not one per id: the statement is built and bound in no time whatever the page's size.
  const rows = await query<{ linear_id: string; retasc_id: string; hash: string }>(
    tx,
    sql`select linear_id, retasc_id, hash from linear_links where org_id = ${orgId} and linear_id = any(${pgArray(ids)}::text[])`,
  );
  for (const r of rows) links.set(r.linear_id, { retascId: r.retasc_id, hash: r.hash });
  return links;
}

/**
 * The links of `ids` and, in the same statement, the placeholders of `people` (source ids) this
 * org has for `source`: what a page reads before it writes, one round trip (issue 29).
 */
export async function linksAndGhostsOf(tx: Db, orgId: string, ids: string[], source: string, people: string[]): Promise<{ links: Links; ghosts: { sourceUserId: string; userId: string; claimedBy: string | null }[] }> {
  const links: Links = new Map();
  const ghosts: { sourceUserId: string; userId: string; claimedBy: string | null }[] = [];
  if (ids.length === 0 && people.length === 0) return { links, ghosts };
  const rows = await query<{ k: "l" | "g"; id: string; v: string; w: string | null }>(
    tx,
    sql`select 'l' as k, linear_id as id, retasc_id as v, hash as w from linear_links where org_id = ${orgId} and linear_id = any(${pgArray(ids)}::text[])
        union all
        select 'g', source_user_id, user_id, claimed_by from import_ghosts where org_id = ${orgId} and source = ${source} and source_user_id = any(${pgArray(people)}::text[])`,
  );
  for (const r of rows) {
    if (r.k === "l") links.set(r.id, { retascId: r.v, hash: r.w! });
    else ghosts.push({ sourceUserId: r.id, userId: r.v, claimedBy: r.w });
  }
  return { links, ghosts };
}

/** The links as last written, many at once: a link already there takes the new hash (and estimate). */
export async function writeLinks(tx: Db, rows: LinkRow[]): Promise<void> {
  await insertJson(tx, linearLinks, rows, updateFromProposed(["org_id", "linear_id"], ["hash", "estimate"]));
}

export async function setLink(tx: Db, orgId: string, linearId: string, kind: LinkRow["kind"], retascId: string, hash: string, estimate: number | null = null) {
  await writeLinks(tx, [{ orgId, linearId, kind, retascId, hash, estimate }]);
}

/** `insert … on conflict (id) do update` setting `keys` from the proposed row: changed items updated in place, all in one statement. */
export async function upsertById<T extends typeof issues | typeof comments | typeof attachments>(tx: Db, table: T, rows: T["$inferInsert"][], keys: (keyof T["$inferInsert"] & string)[]): Promise<void> {
  const columns = table as unknown as Record<string, { name: string }>;
  await insertJson(tx, table, rows, updateFromProposed(["id"], keys.map((k) => columns[k]!.name)));
}
