import { getTableColumns, getTableName, sql, type SQL } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { Db } from "../../../db/client.ts";

/**
 * Rows written as one JSON parameter read back through the table's own row type
 * (`json_populate_recordset`), so a page's rows of one table are one statement with one
 * parameter. drizzle's multi-row insert binds and type-checks every value on its own: for a
 * 2,000-issue import that cost the app more CPU than PostgreSQL spent writing the rows (decision
 * 084). Only the columns some row sets are written; the rest take their defaults. Values go as
 * JSON (a Date as its ISO text, a jsonb column's object as itself), so this is for plain columns:
 * text, numbers, booleans, timestamps, jsonb. `tail` is the statement's `on conflict …`.
 */
export async function insertJson<T extends PgTable>(tx: Db, table: T, rows: T["$inferInsert"][], tail: SQL = sql``): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.entries(getTableColumns(table)).filter(([key]) => rows.some((r) => (r as Record<string, unknown>)[key] !== undefined));
  const names = sql.raw(columns.map(([, c]) => `"${c.name}"`).join(", "));
  const json = JSON.stringify(rows.map((r) => Object.fromEntries(columns.map(([key, c]) => [c.name, (r as Record<string, unknown>)[key] ?? null]))));
  await tx.execute(sql`insert into ${sql.identifier(getTableName(table))} (${names}) select ${names} from json_populate_recordset(null::${sql.identifier(getTableName(table))}, ${json}::json) ${tail}`);
}

/** `on conflict (…) do update set` each of `columns` (by column name) from the proposed row. */
export const updateFromProposed = (target: string[], columns: string[]) =>
  sql.raw(`on conflict (${target.map((t) => `"${t}"`).join(", ")}) do update set ${columns.map((c) => `"${c}" = excluded."${c}"`).join(", ")}`);
