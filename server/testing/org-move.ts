import type postgres from "postgres";
import type { PgCluster } from "./pg-cluster.ts";

/**
 * The steps of moving one org between two stacks' databases with logical replication (decision
 * 107; docs/operations.md, "Moving one org to another stack"), as SQL an operator runs in psql.
 * server/orgs/move-org.test.ts runs them mid-swarm.
 */

/**
 * Tables without org_id and why none is published by org: the global directory's (people, their
 * sign-ins and OAuth; decision 099), per-stack state, and `orgs` itself (filtered by id).
 * (`billing_stripe_reversals` has its org_id since migration 0078, decision 110: published like the rest.)
 */
export const NOT_BY_ORG_ID: Record<string, string> = {
  orgs: "the org's own row: published with (id = org)",
  user: "global directory: the org's members' rows are published with (id in (...)) as its stand-in",
  account: "global directory",
  session: "global directory",
  verification: "global directory",
  device_code: "global directory",
  oauth_access_token: "global directory",
  oauth_refresh_token: "global directory",
  oauth_client: "global directory",
  oauth_client_assertion: "global directory",
  oauth_client_resource: "global directory",
  oauth_consent: "global directory",
  oauth_grants: "global directory",
  oauth_resource: "global directory",
  issue_status_counts: "per stack: the target adds the org's counts after the copy",
  issue_count_changes: "per stack: folded into issue_status_counts",
  job_receipts: "per stack: the runner's idempotency keys",
};

/** The serial columns of org-owned tables: not replicated, set on the target past the moved rows. */
export const SERIAL_TABLES = ["activity", "outbox", "billing_charges", "billing_credits"] as const;

/** Every table of the public schema that has an org_id column. */
export async function orgIdTables(s: postgres.Sql): Promise<string[]> {
  const rows = await s`
    select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
      and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'org_id' and not a.attisdropped)
    order by 1`;
  return rows.map((r) => r.relname as string);
}

/** Every table of the public schema without one. */
export async function otherTables(s: postgres.Sql): Promise<string[]> {
  const rows = await s`
    select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
      and not exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'org_id' and not a.attisdropped)
    order by 1`;
  return rows.map((r) => r.relname as string);
}

const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * On the source: the publication of one org. A row filter on UPDATE and DELETE may only name
 * replica-identity columns, and org_id is in no table's primary key, so every published table
 * is REPLICA IDENTITY FULL for the move (more WAL per update until `endPublication`).
 */
export async function publishOrg(source: postgres.Sql, orgId: string, userIds: string[], name = "retasc_move"): Promise<string[]> {
  const tables = await orgIdTables(source);
  for (const table of tables) await source.unsafe(`alter table "${table}" replica identity full`);
  const users = userIds.map(literal).join(", ");
  const list = [
    ...tables.map((t) => `"${t}" where (org_id = ${literal(orgId)})`),
    `"orgs" where (id = ${literal(orgId)})`,
    `"user" where (id in (${users}))`,
  ];
  await source.unsafe(`create publication ${name} for table ${list.join(", ")}`);
  return tables;
}

/** On the target: the subscription, copying what is there and then streaming the rest. */
export async function subscribeTo(target: postgres.Sql, source: PgCluster, name = "retasc_move"): Promise<void> {
  await target.unsafe(
    `create subscription ${name} connection 'host=127.0.0.1 port=${source.port} user=postgres dbname=retasc' publication ${name} with (copy_data = true)`,
  );
}

/** On the target: every table copied (each table's sync finished, streaming since). */
export async function copied(target: postgres.Sql): Promise<boolean> {
  const [row] = await target`select count(*)::int as n from pg_subscription_rel where srsubstate <> 'r'`;
  return row!.n === 0;
}

/** On the target: the subscription has applied the source's WAL up to `lsn` (and told the source so). */
export async function reached(target: postgres.Sql, lsn: string, name = "retasc_move"): Promise<boolean> {
  const [row] = await target`select latest_end_lsn >= ${lsn}::pg_lsn as ok from pg_stat_subscription where subname = ${name} and relid is null`;
  return row?.ok === true;
}

/**
 * On the target once it reached the freeze's LSN: the subscription goes (with its slot on the
 * source, so the source's later purge of the org is not replicated), the serial sequences move
 * past the moved rows, and the moved issues join the per-stack status counts.
 */
export async function finishOnTarget(target: postgres.Sql, orgId: string, name = "retasc_move"): Promise<void> {
  await target.unsafe(`drop subscription ${name}`);
  for (const table of SERIAL_TABLES) {
    await target.unsafe(
      `select setval(pg_get_serial_sequence('${table}', 'id'), greatest((select coalesce(max(id), 1) from "${table}"), (select last_value from ${table}_id_seq)))`,
    );
  }
  await target`
    insert into issue_status_counts (status, n) select status, count(*) from issues where org_id = ${orgId} group by status
    on conflict (status) do update set n = issue_status_counts.n + excluded.n`;
}

/** On the source once the move is done: the publication goes and the tables log updates as before. */
export async function endPublication(source: postgres.Sql, tables: string[], name = "retasc_move"): Promise<void> {
  await source.unsafe(`drop publication ${name}`);
  for (const table of tables) await source.unsafe(`alter table "${table}" replica identity default`);
}

/** Row count and a checksum of every row's text, per table, of one org (its members' `user` rows too). */
export async function orgChecksums(s: postgres.Sql, tables: string[], orgId: string, userIds: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const sum = async (table: string, where: string) => {
    const [row] = await s.unsafe(`select count(*)::int as n, coalesce(md5(string_agg(t::text, '|' order by t::text)), '-') as h from "${table}" t where ${where}`);
    out[table] = `${row!.n} ${row!.h}`;
  };
  for (const table of tables) await sum(table, `org_id = ${literal(orgId)}`);
  await sum("orgs", `id = ${literal(orgId)}`);
  if (userIds.length > 0) await sum("user", `id in (${userIds.map(literal).join(", ")})`);
  return out;
}
