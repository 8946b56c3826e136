import { eq, getTableColumns, sql } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { Db } from "../../db/client.ts";
import { issues, projects, relations } from "../../db/schema/index.ts";
import type { Services } from "../../server/context.ts";
import { ownLevelOf, slaOf } from "../../server/issues/levels.ts";
import { newId } from "../../server/orgs/index.ts";
import type { BenchDatabase } from "./env.ts";

/**
 * Bulk seeding for the benchmarks: issues and `blocks` edges go in with multi-row inserts,
 * their ranking columns computed here with the engine's own level arithmetic, so a 100k
 * graph takes seconds instead of 100k saveIssue calls. The benchmark then checks a sample
 * of what was written against the engine's rerank.
 */

export interface SeedIssue {
  title: string;
  priority: number;
  dueAt: Date | null;
  assigneeId: string | null;
  createdAt: Date;
}

/** `edges` are [blocker index, blocked index] into `issues`; they must form a DAG. */
export interface SeedGraph {
  issues: SeedIssue[];
  edges: [number, number][];
}

export interface SeededIssue {
  id: string;
  number: number;
  identifier: string;
  assigneeId: string | null;
  createdAt: Date;
  effectiveLevel: number;
  effectiveDueAt: Date | null;
  openBlockerCount: number;
  /** Always todo: seeded issues are never in review. */
  status: "todo";
}

export interface SeedTarget {
  orgId: string;
  projectId: string;
  prefix: string;
  authorId: string;
}

const CHUNK = 10_000;
const PARALLEL = 4;

async function inParallel(tasks: (() => PromiseLike<unknown>)[], width: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: width }, worker));
}

/**
 * Inserts rows with one array parameter per column (`insert ... select * from unnest(...)`):
 * a statement of a few dozen parameters instead of one per value. Columns and their types
 * come from the Drizzle table, values through each column's own driver mapping, sent as
 * text arrays (the driver leaves other array types, such as timestamps, unserialised).
 */
async function bulkInsert<T extends PgTable>(db: Db, table: T, rows: T["$inferInsert"][]): Promise<void> {
  if (rows.length === 0) return;
  const present = Object.keys(rows[0]!);
  const columns = Object.entries(getTableColumns(table)).filter(([key]) => present.includes(key));
  const arrays = columns.map(([key, column]) =>
    sql`${sql.param(rows.map((row) => {
      const value = (row as Record<string, unknown>)[key];
      return value === null || value === undefined ? null : String(column.mapToDriverValue(value));
    }))}::text[]::${sql.raw(column.getSQLType())}[]`,
  );
  await db.execute(
    sql`insert into ${table} (${sql.join(columns.map(([, column]) => sql.identifier(column.name)), sql`, `)})
        select * from unnest(${sql.join(arrays, sql`, `)})`,
  );
}

/** Effective level and deadline over the DAG: every issue takes the max level / earliest deadline of what it transitively blocks. */
function effectiveRanking(ownLevels: number[], dues: (number | null)[], edges: [number, number][]) {
  const n = ownLevels.length;
  const targets: number[][] = Array.from({ length: n }, () => []);
  const indegree = new Array<number>(n).fill(0);
  for (const [source, target] of edges) {
    targets[source]!.push(target);
    indegree[target]!++;
  }
  // Kahn order puts blockers before what they block; walking it backwards settles targets first.
  const order: number[] = [];
  const pending = [...indegree];
  for (let i = 0; i < n; i++) if (pending[i] === 0) order.push(i);
  for (let k = 0; k < order.length; k++) {
    for (const t of targets[order[k]!]!) if (--pending[t]! === 0) order.push(t);
  }
  if (order.length !== n) throw new Error("seed graph has a cycle");
  const level = [...ownLevels];
  const due = [...dues];
  for (let k = n - 1; k >= 0; k--) {
    const i = order[k]!;
    for (const t of targets[i]!) {
      level[i] = Math.max(level[i]!, level[t]!);
      const d = due[t]!;
      if (d !== null && (due[i] === null || d < due[i]!)) due[i] = d;
    }
  }
  return { level, due, indegree };
}

export async function seedGraph(services: Services, target: SeedTarget, graph: SeedGraph, now: Date): Promise<SeededIssue[]> {
  const cipher = await services.keyring.forOrg(services.db, target.orgId);
  const slas = graph.issues.map((issue) => slaOf(issue.dueAt, issue.dueAt ? issue.createdAt : null, now));
  const own = graph.issues.map((issue, i) => ownLevelOf(issue.priority, slas[i]!));
  const { level, due, indegree } = effectiveRanking(
    own,
    graph.issues.map((issue) => issue.dueAt?.getTime() ?? null),
    graph.edges,
  );
  const seeded: SeededIssue[] = graph.issues.map((issue, i) => ({
    id: newId(),
    number: i + 1,
    identifier: `${target.prefix}-${i + 1}`,
    assigneeId: issue.assigneeId,
    createdAt: issue.createdAt,
    effectiveLevel: level[i]!,
    effectiveDueAt: due[i] === null ? null : new Date(due[i]!),
    openBlockerCount: indegree[i]!,
    status: "todo",
  }));
  const blocked = new Set(graph.edges.map(([, t]) => t));
  const noDependency = cipher.encrypt("seeded by the benchmark");
  const issueChunks: (typeof issues.$inferInsert)[][] = [];
  for (let start = 0; start < seeded.length; start += CHUNK) {
    issueChunks.push(
      seeded.slice(start, start + CHUNK).map((s, k) => {
        const i = start + k;
        const issue = graph.issues[i]!;
        const sla = slas[i]!;
        return {
          id: s.id,
          orgId: target.orgId,
          projectId: target.projectId,
          number: s.number,
          identifier: s.identifier,
          titleEnc: cipher.encrypt(issue.title),
          noDependencyEnc: blocked.has(i) ? null : noDependency,
          work: true,
          status: s.status,
          priority: issue.priority,
          assigneeId: issue.assigneeId,
          authorId: target.authorId,
          dueAt: issue.dueAt,
          dueSetAt: issue.dueAt ? issue.createdAt : null,
          ownLevel: own[i]!,
          effectiveLevel: s.effectiveLevel,
          effectiveDueAt: s.effectiveDueAt,
          openBlockerCount: s.openBlockerCount,
          slaState: sla.state,
          slaNextAt: sla.nextAt,
          createdAt: issue.createdAt,
          updatedAt: issue.createdAt,
        };
      }),
    );
  }
  const relationChunks: (typeof relations.$inferInsert)[][] = [];
  for (let start = 0; start < graph.edges.length; start += CHUNK) {
    relationChunks.push(
      graph.edges.slice(start, start + CHUNK).map(([source, blockedIndex]) => ({
        id: newId(),
        orgId: target.orgId,
        sourceId: seeded[source]!.id,
        targetId: seeded[blockedIndex]!.id,
        type: "blocks" as const,
      })),
    );
  }
  // Chunks go in on every connection of the pool at once; edges only after all their issues.
  await inParallel(issueChunks.map((rows) => () => bulkInsert(services.db, issues, rows)), PARALLEL);
  await inParallel(relationChunks.map((rows) => () => bulkInsert(services.db, relations, rows)), PARALLEL);
  await services.db.update(projects).set({ nextNumber: seeded.length + 1 }).where(eq(projects.id, target.projectId));
  await analyze(services.db);
  return seeded;
}

/** Fresh planner statistics after a bulk load, as autovacuum would eventually give. */
export async function analyze(db: Db): Promise<void> {
  await db.execute(sql`analyze issues`);
  await db.execute(sql`analyze relations`);
  await db.execute(sql`analyze leases`);
}

/**
 * `count` ready issues for a claim loop (`claim-cpu.ts`, `claim-loop.ts`): priorities 0 to 4 in
 * turn, created a second apart so the dispatch order is total, written by the org's alice; then
 * ANALYZE, so the picks plan on real statistics.
 */
export async function seedClaimQueue(bench: BenchDatabase, count: number): Promise<void> {
  const start = Date.now() - count * 1000;
  const seed = Array.from({ length: count }, (_, i) => ({
    title: `Issue ${i + 1}`,
    priority: i % 5,
    dueAt: null,
    assigneeId: null,
    createdAt: new Date(start + i * 1000),
  }));
  await seedGraph(bench.pools[0]!, { ...bench.org, authorId: bench.org.agents.alice.userId }, { issues: seed, edges: [] }, new Date());
  await bench.pools[0]!.db.execute(sql`analyze`);
}
