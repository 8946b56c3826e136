import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testDriver, type TestDatabase } from "../server/testing/db.ts";
import { query } from "./client.ts";
import { hotFunctions, variableTypes, type HotStatement } from "./testing/hot/functions.ts";
import { globalTables, hotStatements, hotTables, partitions } from "./testing/hot-statements.ts";

/**
 * Org-keyed statements, ready to partition (issue 36, decision 099). In a scratch schema of a
 * test database, every hot table gets a copy hash-partitioned by `org_id` (16 partitions) with
 * the same indexes; then each hot statement of dispatch, finish, the view reads and the leases
 * (db/testing/hot-statements.ts, copied from the SQL functions) is prepared with the scratch
 * schema first on the search path, planned generic (`plan_cache_mode = force_generic_plan`, as
 * the functions run) and explained with parameters. Each must read at most one partition of each
 * partitioned table: pruned at plan time, or at executor start ("Subplans Removed").
 *
 * The statements are copies, so a second check holds them to their source: the md5 of each
 * function's definition (pg_get_functiondef) is recorded beside its statements, and a function
 * that changes fails here until its statements are copied again and the hash updated. The
 * heartbeat's statement lives in TypeScript: its copy must appear in server/queue/heartbeat-held.ts,
 * with the named fragment that file interpolates (`beatSteps`, server/queue/beat-log.ts) spliced in.
 */

const schema = "retasc_partition_plan";

/** `p_org_id`, `v_row.id`, … in a copied statement become `$1`, `$2`, … with their types. */
function prepared(statement: HotStatement) {
  const names: string[] = [];
  const text = statement.sql.replace(/\b(?:p|v)_[a-z_]+(?:\.[a-z_]+)?\b/g, (name) => {
    if (!(name in variableTypes)) throw new Error(`${statement.name}: no type for ${name} in variableTypes`);
    let index = names.indexOf(name);
    if (index < 0) index = names.push(name) - 1;
    return `$${index + 1}`;
  });
  return {
    text,
    types: names.map((n) => variableTypes[n]![0]),
    values: names.map((n) => variableTypes[n]![1]),
  };
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Subplans Removed"?: number;
  Plans?: PlanNode[];
}

/** The partitions of each partitioned table a plan reads. */
function partitionsRead(plan: PlanNode): Map<string, Set<string>> {
  const read = new Map<string, Set<string>>();
  const walk = (node: PlanNode) => {
    const match = node["Relation Name"]?.match(/^(.+)_p(\d+)$/);
    if (match && hotTables.includes(match[1]!)) {
      if (!read.has(match[1]!)) read.set(match[1]!, new Set());
      read.get(match[1]!)!.add(match[2]!);
    }
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(plan);
  return read;
}

/**
 * A TypeScript source's text with each named sql fragment it interpolates spliced in, so that a
 * statement built of fragments is held to its copy as one text. A fragment is an `${name(…)}`
 * whose `name` the file imports from a relative module that declares it as
 * `export function name(…): SQL { return sql`…`; }` (beatSteps, server/queue/beat-log.ts); its
 * template is expanded the same way. Every other interpolation stays, and reads as a parameter.
 */
function withFragments(file: string, text = fs.readFileSync(file, "utf8"), seen: string[] = []): string {
  const imports = new Map<string, { name: string; module: string }>();
  for (const [, names, from] of fs.readFileSync(file, "utf8").matchAll(/^import\s*\{([^}]*)\}\s*from\s*"(\.[^"]+)"/gm)) {
    for (const entry of names!.split(",").map((n) => n.trim()).filter((n) => n && !n.startsWith("type "))) {
      const [name, local = name] = entry.split(/\s+as\s+/) as [string, string?];
      imports.set(local, { name, module: path.resolve(path.dirname(file), from!) });
    }
  }
  return text.replace(/\$\{(\w+)\([^)]*\)\}/g, (whole, local: string) => {
    const imported = imports.get(local);
    if (!imported) return whole;
    const declared = new RegExp(`export function ${imported.name}\\([^)]*\\)(?::\\s*SQL)?\\s*\\{\\s*return sql\`([^\`]*)\`;\\s*\\}`);
    const fragment = fs.readFileSync(imported.module, "utf8").match(declared)?.[1];
    if (fragment === undefined) return whole;
    const at = `${imported.module}#${imported.name}`;
    if (seen.includes(at)) throw new Error(`a fragment within itself: ${[...seen, at].join(" -> ")}`);
    return withFragments(imported.module, fragment, [...seen, at]);
  });
}

const toText = (literal: string | null) => (literal === null ? "null" : `'${literal.replaceAll("'", "''")}'`);

describe.skipIf(testDriver !== "postgres")("hot statements prune to one partition by org (issue 36, decision 099)", () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase({ max: 1 });
    const db = t.database.db;
    await db.execute(sql.raw(`create schema ${schema}`));
    for (const table of hotTables) {
      await db.execute(sql.raw(`create table ${schema}.${table} (like public.${table} including defaults) partition by hash (org_id)`));
      for (let r = 0; r < partitions; r++) {
        await db.execute(sql.raw(`create table ${schema}.${table}_p${r} partition of ${schema}.${table} for values with (modulus ${partitions}, remainder ${r})`));
      }
      // The same indexes; a unique one must name org_id on a partitioned table, so each is built
      // plain: the planner's choices stay the same, uniqueness is not what this test is about.
      const indexes = await query<{ indexdef: string }>(db, sql`select indexdef from pg_indexes where schemaname = 'public' and tablename = ${table}`);
      for (const { indexdef } of indexes) {
        await db.execute(sql.raw(indexdef.replace(/^CREATE UNIQUE INDEX/, "CREATE INDEX").replace(` ON public.${table} `, ` ON ${schema}.${table} `)));
      }
    }
  });

  afterAll(async () => {
    await t?.close();
  });

  it("each hot function's definition is the one its statements were copied from", async () => {
    const rows = await query<{ signature: string; hash: string }>(
      t.database.db,
      sql`select p.oid::regprocedure::text as signature, md5(pg_get_functiondef(p.oid)) as hash
            from pg_proc p where p.pronamespace = 'public'::regnamespace`,
    );
    const actual = new Map(rows.map((r) => [r.signature, r.hash]));
    const drifted = Object.entries(hotFunctions)
      .filter(([signature, f]) => actual.get(signature) !== f.md5)
      .map(([signature, f]) => `${signature} (copied from ${f.migration}): ${actual.get(signature) ?? "missing"}`);
    // A function changed: copy its hot statements into db/testing/hot/ again, then record the new md5 in hot/functions.ts.
    expect(drifted).toEqual([]);
    for (const statement of hotStatements) {
      expect(statement.source in hotFunctions || statement.source.endsWith(".ts"), statement.name).toBe(true);
    }
  });

  it("the heartbeat's statement is the one in server/queue/heartbeat-held.ts", () => {
    const normalize = (s: string) => s.replace(/\$\{[^}]+\}(::\w+)?/g, "?").replace(/\b(?:p|v)_[a-z_]+(?:\.[a-z_]+)?\b(::\w+)?/g, "?").replace(/\s+/g, " ");
    for (const statement of hotStatements.filter((s) => s.source.endsWith(".ts"))) {
      const file = normalize(withFragments(path.join(import.meta.dirname, "..", statement.source)));
      expect(file.includes(normalize(statement.sql).trim()), statement.name).toBe(true);
    }
  });

  it("every hot statement's generic plan reads one partition of each partitioned table", async () => {
    const db = t.database.db;
    await db.execute(sql.raw(`set search_path = ${schema}, public`));
    await db.execute(sql.raw(`set plan_cache_mode = force_generic_plan`));
    const results: { name: string; read: Record<string, number> }[] = [];
    try {
      for (const [n, statement] of hotStatements.entries()) {
        const p = prepared(statement);
        const name = `hot_${n}`;
        await db.execute(sql.raw(`prepare ${name}(${p.types.join(", ")}) as ${p.text}`));
        const args = p.values.length ? `(${p.values.map((v, i) => `${toText(v)}::${p.types[i]}`).join(", ")})` : "";
        const [row] = await query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(db, sql.raw(`explain (format json) execute ${name}${args}`));
        await db.execute(sql.raw(`deallocate ${name}`));
        const read = partitionsRead(row!["QUERY PLAN"][0].Plan);
        results.push({ name: statement.name, read: Object.fromEntries([...read].map(([table, set]) => [table, set.size])) });
      }
    } finally {
      await db.execute(sql.raw(`reset search_path`));
      await db.execute(sql.raw(`reset plan_cache_mode`));
    }
    const wide = results.filter((r) => Object.values(r.read).some((count) => count > 1));
    console.log(
      `partition plan: ${results.length} hot statements, ${results.length - wide.length} prune to one partition` +
        (wide.length ? `; wide: ${wide.map((w) => `${w.name} ${JSON.stringify(w.read)}`).join(", ")}` : ""),
    );
    // Only the statements marked wide, each with its reason, read more than one partition.
    expect(wide.map((w) => w.name)).toEqual(hotStatements.filter((s) => s.wide).map((s) => s.name));
    // Every statement names a partitioned table (a list of statements reading none would test nothing).
    expect(results.filter((r) => Object.keys(r.read).length === 0 && !/^insert/i.test(hotStatements.find((s) => s.name === r.name)!.sql.trim())).map((r) => r.name)).toEqual([]);
  });

  it("every table without org_id is one of the global ones (decision 099)", async () => {
    const rows = await query<{ table_name: string }>(
      t.database.db,
      sql`select c.relname as table_name from pg_class c
           where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')
             and not exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'org_id' and not a.attisdropped)
           order by 1`,
    );
    expect(rows.map((r) => r.table_name)).toEqual([...globalTables].sort());
  });

  it("every insert into a partitioned table names org_id, so the row routes to its org's partition", () => {
    for (const statement of hotStatements.filter((s) => /^insert/i.test(s.sql.trim()))) {
      expect(statement.sql, statement.name).toMatch(/^\s*insert into \w+ \([^)]*\borg_id\b/i);
    }
  });
});
