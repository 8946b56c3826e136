import { sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { analyze } from "./seed.ts";

/**
 * Filler orgs for the benchmarks at scale (bench/million.ts, bench/soak.ts): every org looks
 * like the measured one, 20% of its issues blocked in chains up to 20 deep, 10% with a
 * deadline far enough off that no SLA threshold falls in a run. Filled by generate_series in
 * SQL: ranking columns follow the app's rules, titles are placeholders nothing decrypts, and
 * the orgs have no people or keys.
 */
export const ISSUES_PER_ORG = 1_000;
const PROJECTS_PER_ORG = 2;
/** Per project: chains of 21 (a root and 20 blocked beneath it) until 20% are blocked. */
const CHAIN = 21;

/** Orgs `from`..`to` - 1, in slices of 100 orgs so one statement never holds a million rows in memory. */
export async function fillOrgs(db: Db, from: number, to: number): Promise<void> {
  for (let first = from; first < to; first += 100) await fillSlice(db, first, Math.min(to, first + 100));
}

/**
 * Orgs `from`..`to` - 1 (filler), each with PROJECTS_PER_ORG projects of ISSUES_PER_ORG /
 * PROJECTS_PER_ORG issues: one statement per table, so the fill is PostgreSQL's own speed.
 */
async function fillSlice(db: Db, from: number, to: number): Promise<void> {
  const perProject = ISSUES_PER_ORG / PROJECTS_PER_ORG;
  const blockedPerProject = Math.round(perProject * 0.2);
  // Members of the first chains: number n is blocked (by n - 1) unless it starts a chain.
  const chainMembers = Math.ceil(blockedPerProject / (CHAIN - 1)) * CHAIN;
  await db.execute(sql`
    insert into orgs (id, name)
    select 'fill-org-' || o, 'Filler ' || o from generate_series(${from}::int, ${to - 1}::int) o`);
  await db.execute(sql`
    insert into projects (id, org_id, name, prefix, next_number)
    select 'fill-prj-' || o || '-' || p, 'fill-org-' || o, 'Project ' || p, 'F' || p, ${perProject + 1}::int
    from generate_series(${from}::int, ${to - 1}::int) o, generate_series(1, ${PROJECTS_PER_ORG}::int) p`);
  await db.execute(sql`
    insert into issues (id, org_id, project_id, number, identifier, title_enc, no_dependency_enc, work, status, priority,
                        due_at, due_set_at, own_level, effective_level, effective_due_at, open_blocker_count,
                        sla_state, sla_next_at, created_at, updated_at)
    select 'fill-iss-' || o || '-' || p || '-' || n, 'fill-org-' || o, 'fill-prj-' || o || '-' || p, n, 'F' || p || '-' || n,
           'placeholder', case when blocked then null else 'placeholder' end, true, 'todo', prio,
           due, case when due is null then null else now() end,
           level, level, due, case when blocked then 1 else 0 end,
           case when due is null then 'none' else 'ok' end, null,
           now() - (n || ' minutes')::interval, now()
    from generate_series(${from}::int, ${to - 1}::int) o,
         generate_series(1, ${PROJECTS_PER_ORG}::int) p,
         generate_series(1, ${perProject}::int) n,
         lateral (select
           n <= ${chainMembers}::int and (n - 1) % ${CHAIN}::int <> 0 as blocked,
           ((n * 7 + o) % 5)::smallint as prio,
           case when n % 10 = 3 then now() + ((30 + n % 60) || ' days')::interval end as due) v,
         lateral (select (case when prio = 0 then 0 else 5 - prio end)::smallint as level) l`);
  await db.execute(sql`
    insert into relations (id, org_id, source_id, target_id, type)
    select 'fill-rel-' || o || '-' || p || '-' || n, 'fill-org-' || o,
           'fill-iss-' || o || '-' || p || '-' || (n - 1), 'fill-iss-' || o || '-' || p || '-' || n, 'blocks'
    from generate_series(${from}::int, ${to - 1}::int) o,
         generate_series(1, ${PROJECTS_PER_ORG}::int) p,
         generate_series(2, ${chainMembers}::int) n
    where (n - 1) % ${CHAIN}::int <> 0`);
  await analyze(db);
}
