import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { DomainError } from "../errors.ts";

/** Rows removed per statement: each batch is its own short transaction. */
export const PURGE_BATCH = 500;

/**
 * Removes a deleted org's rows (server/orgs/delete.ts), run by the `org.purge` job. Every table
 * with an `org_id` is emptied of the org's rows a batch at a time, children before the tables
 * they reference, so no statement cascades into a large delete and no lock is held longer than
 * one batch; other orgs' requests go on between batches. Each batch commits, so a crash resumes
 * where it stopped when the job runs again. Refused for an org that still has its data key: only
 * a deletion, which destroys the key first, leads here.
 */
export async function purgeOrg(
  db: Db,
  orgId: string,
  options: { batch?: number; keepOutboxId?: number } = {},
): Promise<{ rows: number; batches: number }> {
  const batch = options.batch ?? PURGE_BATCH;
  const live = await query(db, sql`select 1 from org_keys where org_id = ${orgId} limit 1`);
  if (live.length > 0) throw new DomainError("FORBIDDEN", `org ${orgId} has its data key: it was not deleted`, "Delete the org first (server/orgs/delete.ts).");
  let rows = 0;
  let batches = 0;
  for (const table of await tablesInDeleteOrder(db)) {
    // The purge's own outbox row stays until its runner marks it completed.
    const keep = table === "outbox" && options.keepOutboxId !== undefined ? sql` and id <> ${options.keepOutboxId}` : sql``;
    for (;;) {
      const done = await query(
        db,
        sql`delete from ${sql.identifier(table)} where ctid = any(array(
              select ctid from ${sql.identifier(table)} where org_id = ${orgId}${keep} limit ${batch})) returning 1`,
      );
      batches += 1;
      rows += done.length;
      if (done.length < batch) break;
    }
  }
  await db.execute(sql`delete from orgs where id = ${orgId}`);
  return { rows, batches };
}

/**
 * The tables holding an `org_id`, each after every table that references it, read from the
 * catalog so a table added later is purged too.
 */
async function tablesInDeleteOrder(db: Db): Promise<string[]> {
  const tables = await query<{ name: string }>(
    db,
    sql`select c.table_name as name from information_schema.columns c
        join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
        where c.column_name = 'org_id' and c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
          and c.table_name not in ('orgs', 'org_keys')
        order by c.table_name`,
  );
  const edges = await query<{ child: string; parent: string }>(
    db,
    sql`select ch.relname as child, pa.relname as parent from pg_constraint k
        join pg_class ch on ch.oid = k.conrelid join pg_class pa on pa.oid = k.confrelid
        where k.contype = 'f' and ch.oid <> pa.oid and ch.relnamespace = pa.relnamespace`,
  );
  const left = new Set(tables.map((t) => t.name));
  const order: string[] = [];
  while (left.size > 0) {
    const referenced = new Set(edges.filter((e) => left.has(e.child) && left.has(e.parent)).map((e) => e.parent));
    // A table no remaining table references goes next; a cycle (none today) is broken by name order.
    const next = [...left].find((t) => !referenced.has(t)) ?? [...left][0]!;
    order.push(next);
    left.delete(next);
  }
  return order;
}
