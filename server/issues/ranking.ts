import { sql, type SQL } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { isOpen } from "../../db/schema/dispatch.ts";

/**
 * Keeps the stored ranking columns current. Effective level = max(own level, effective
 * level of every non-terminal issue it blocks); effective deadline = earliest deadline
 * among itself and what it gates. Only the changed issues and their transitive blockers
 * are recomputed, in memory, from one read of their ancestors and the edges out of them.
 */

/**
 * Serialises graph-changing writes within an org so incremental re-ranking never races.
 * `shared` is for writes that re-rank nothing but their own issue (closing an issue nothing
 * open blocks): they run side by side, and still never beside a graph change.
 */
export async function lockOrgGraph(tx: Db, orgId: string, mode: "exclusive" | "shared" = "exclusive"): Promise<void> {
  const key = rankLockKey(sql`${orgId}::text`);
  await tx.execute(mode === "shared" ? sql`select pg_advisory_xact_lock_shared(${key})` : sql`select pg_advisory_xact_lock(${key})`);
}

/** The advisory lock key of an org's graph; retasc_finish and retasc_finishes take it too (checked by server/queue/dispatch-sql.test.ts). */
export const rankLockKey = (orgId: SQL): SQL => sql`hashtext('rank:' || ${orgId})`;

export const idList = (ids: readonly string[]): SQL => sql.join(ids.map((id) => sql`${id}`), sql`, `);

interface NodeRow {
  id: string;
  own_level: number;
  due_at: string | Date | null;
  status: string;
  effective_level: number;
  effective_due_at: string | Date | null;
}
interface EdgeRow {
  source_id: string;
  target_id: string;
  effective_level: number;
  effective_due_at: string | Date | null;
}

const ms = (v: string | Date | null): number | null => (v === null ? null : new Date(v).getTime());
const minDue = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));

/** Recomputes effective level and deadline for `seeds` and everything that transitively blocks them. */
export async function rerank(tx: Db, seeds: readonly string[]): Promise<number> {
  if (seeds.length === 0) return 0;
  const changes = rankChanges(await readRankGraph(tx, sql`i.id in (${idList(seeds)})`));
  await writeRanks(tx, changes);
  return changes.length;
}

/** What `rerank` reads, one row each: a node (target_id null) or an edge out of a node. */
export type RankGraph = (NodeRow & { target_id: string | null })[];

/**
 * `rerank`'s one read: the seeds (the issues `seeds` selects, as `i`) and their open blockers,
 * transitively (nodes), and every open issue those nodes block, with its stored ranking (edges).
 */
export function readRankGraph(tx: Db, seeds: SQL): Promise<RankGraph> {
  return query<NodeRow & { target_id: string | null }>(
    tx,
    sql`with recursive up(id) as (
          select i.id from issues i where ${seeds}
          union
          select r.source_id from relations r
            join up on r.target_id = up.id
            join issues s on s.id = r.source_id and ${isOpen(sql`s.status`)}
          where r.type = 'blocks'
        )
        select i.id, null::text as target_id, i.own_level, i.due_at, i.status, i.effective_level, i.effective_due_at
        from issues i join up on up.id = i.id
        union all
        select r.source_id, r.target_id, null::smallint, null::timestamptz, null::text, t.effective_level, t.effective_due_at
        from relations r join issues t on t.id = r.target_id
        where r.type = 'blocks' and r.source_id in (select id from up) and ${isOpen(sql`t.status`)}`,
  );
}

/** An issue's new effective level and deadline. */
export interface RankChange {
  id: string;
  level: number;
  due: Date | null;
}

/**
 * The nodes whose stored effective level or deadline is no longer what the graph gives, computed in
 * memory. `pending` holds own levels and deadlines a write not yet sent will store (its status
 * unchanged), read as if stored.
 */
export function rankChanges(rows: RankGraph, pending: ReadonlyMap<string, { ownLevel: number; dueAt: Date | null }> = new Map()): RankChange[] {
  const nodes: NodeRow[] = [];
  const edges: EdgeRow[] = [];
  for (const row of rows) {
    if (row.target_id === null) {
      const next = pending.get(row.id);
      nodes.push(next ? { ...row, own_level: next.ownLevel, due_at: next.dueAt } : row);
    } else edges.push({ source_id: row.id, target_id: row.target_id, effective_level: row.effective_level, effective_due_at: row.effective_due_at });
  }
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const targets = new Map<string, EdgeRow[]>();
  for (const e of edges) {
    const list = targets.get(e.source_id) ?? [];
    list.push(e);
    targets.set(e.source_id, list);
  }
  const computed = new Map<string, { level: number; due: number | null }>();
  const compute = (id: string): { level: number; due: number | null } => {
    const done = computed.get(id);
    if (done) return done;
    const node = byId.get(id)!;
    const terminal = node.status === "done" || node.status === "canceled";
    let level = Number(node.own_level);
    let due = terminal ? null : ms(node.due_at);
    if (!terminal) {
      for (const edge of targets.get(id) ?? []) {
        const t = byId.has(edge.target_id)
          ? compute(edge.target_id)
          : { level: Number(edge.effective_level), due: ms(edge.effective_due_at) };
        level = Math.max(level, t.level);
        due = minDue(due, t.due);
      }
    }
    const result = { level, due };
    computed.set(id, result);
    return result;
  };
  const changes: RankChange[] = [];
  for (const node of nodes) {
    const { level, due } = compute(node.id);
    if (level !== Number(node.effective_level) || due !== ms(node.effective_due_at)) {
      changes.push({ id: node.id, level, due: due === null ? null : new Date(due) });
    }
  }
  return changes;
}

/** Stores the changed effective levels and deadlines, in one statement (none when nothing changed). */
export async function writeRanks(tx: Db, changes: readonly RankChange[]): Promise<void> {
  if (changes.length === 0) return;
  const values = changes.map((c) => sql`(${c.id}, ${c.level}::smallint, ${c.due === null ? null : c.due.toISOString()}::timestamptz)`);
  await tx.execute(sql`update issues set effective_level = v.level, effective_due_at = v.due
    from (values ${sql.join(values, sql`, `)}) as v(id, level, due) where issues.id = v.id`);
}

/** Is there a path of `blocks` edges from `from` to `to`? (Adding to→from would close a cycle.) */
export async function reaches(tx: Db, from: string, to: string): Promise<boolean> {
  if (from === to) return true;
  const rows = await query<{ found: boolean }>(
    tx,
    sql`with recursive down(id) as (
          select ${from}::text
          union
          select r.target_id from relations r join down on r.source_id = down.id where r.type = 'blocks'
        )
        select exists(select 1 from down where id = ${to}) as found`,
  );
  return Boolean(rows[0]?.found);
}
