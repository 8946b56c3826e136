import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { migrationsFolder, query, type Db } from "../client.ts";

let added = 0;

/**
 * A copy of db/migrations with test migrations after the newest, as the next release would add
 * them (each `when` later than every committed one). Returns the folder and each added file's
 * journal row as drizzle records it (sha256 of the file, `when`).
 */
export function migrationsWith(extra: { tag: string; sql: string }[]): { folder: string; rows: { hash: string; created_at: number }[]; remove(): void } {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-migrations-"));
  fs.cpSync(migrationsFolder, folder, { recursive: true });
  const journalPath = path.join(folder, "meta", "_journal.json");
  const journal = JSON.parse(fs.readFileSync(journalPath, "utf8")) as { entries: { idx: number; version: string; when: number; tag: string; breakpoints: boolean }[] };
  const committed = Math.max(...journal.entries.map((e) => e.when));
  const rows = extra.map(({ tag, sql: text }) => {
    // Later than the committed ones and than those of earlier calls, which a test database may have recorded.
    const when = committed + 1000 * ++added;
    fs.writeFileSync(path.join(folder, `${tag}.sql`), text);
    journal.entries.push({ idx: journal.entries.length, version: "7", when, tag, breakpoints: true });
    return { hash: crypto.createHash("sha256").update(text).digest("hex"), created_at: when };
  });
  fs.writeFileSync(journalPath, JSON.stringify(journal, null, 2));
  return { folder, rows, remove: () => fs.rmSync(folder, { recursive: true, force: true }) };
}

/** The journal table's rows in the order they were written. */
export async function journalRows(db: Db): Promise<{ hash: string; created_at: number }[]> {
  const rows = await query<{ hash: string; created_at: string | number }>(db, sql`select hash, created_at from drizzle.__drizzle_migrations order by id`);
  return rows.map((r) => ({ hash: r.hash, created_at: Number(r.created_at) }));
}

/**
 * What the migrations built, read from the catalog in a stable order: columns, constraints,
 * indexes, functions, triggers and views of the public schema. Two databases migrated two ways
 * compare equal when they hold the same schema.
 */
export async function schemaFingerprint(db: Db): Promise<Record<string, string[]>> {
  const list = async (statement: ReturnType<typeof sql>) => (await query<{ item: string }>(db, statement)).map((r) => r.item);
  return {
    columns: await list(sql`select table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') as item
      from information_schema.columns where table_schema = 'public' order by table_name, ordinal_position`),
    constraints: await list(sql`select conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) as item
      from pg_constraint where connamespace = 'public'::regnamespace order by 1`),
    indexes: await list(sql`select i.indexdef || case when x.indisvalid then '' else ' INVALID' end as item
      from pg_indexes i join pg_class c on c.relname = i.indexname and c.relnamespace = 'public'::regnamespace join pg_index x on x.indexrelid = c.oid
      where i.schemaname = 'public' order by 1`),
    functions: await list(sql`select pg_get_functiondef(p.oid) as item from pg_proc p where p.pronamespace = 'public'::regnamespace and p.prokind in ('f', 'p') order by p.proname, pg_get_function_identity_arguments(p.oid)`),
    triggers: await list(sql`select pg_get_triggerdef(oid) as item from pg_trigger where not tgisinternal order by 1`),
    views: await list(sql`select viewname || ' ' || definition as item from pg_views where schemaname = 'public' order by 1`),
  };
}

/**
 * A copy of db/migrations that drizzle's migrator can apply: it runs every migration in one
 * transaction, where CREATE/DROP INDEX CONCURRENTLY cannot run, so the word is dropped (the
 * index built is the same). `restoreHashes` then writes each row's hash as the committed file's,
 * which is what drizzle records for the files themselves.
 */
export function migrationsWithoutConcurrently(): { folder: string; restoreHashes(db: Db): Promise<void>; remove(): void } {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-migrations-"));
  fs.cpSync(migrationsFolder, folder, { recursive: true });
  const changed: { hash: string; file: string }[] = [];
  for (const file of fs.readdirSync(folder).filter((f) => f.endsWith(".sql"))) {
    const text = fs.readFileSync(path.join(folder, file), "utf8");
    const plain = text.replace(/\b(index)\s+concurrently\b/gi, "$1");
    if (plain === text) continue;
    fs.writeFileSync(path.join(folder, file), plain);
    changed.push({ hash: crypto.createHash("sha256").update(text).digest("hex"), file: crypto.createHash("sha256").update(plain).digest("hex") });
  }
  return {
    folder,
    async restoreHashes(db) {
      for (const { hash, file } of changed) await query(db, sql`update drizzle.__drizzle_migrations set hash = ${hash} where hash = ${file}`);
    },
    remove: () => fs.rmSync(folder, { recursive: true, force: true }),
  };
}
