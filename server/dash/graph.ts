import { and, inArray, sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { issues } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { isTerminal } from "../issues/store.ts";
import { idList } from "../issues/ranking.ts";
import { layoutGraph, type LaidOut } from "./graph-layout.ts";
import { inScope, reachable, type Reach } from "../orgs/scope.ts";

/**
 * An issue's neighbourhood in the dependency graph: its blockers (up to three steps), what it
 * gates (likewise), and for a container every issue under it, with the `blocks` edges among them,
 * laid out by graph-layout.ts. The critical chain is marked: above, the longest run of open
 * blockers that must finish before it can start; below, the path to the issue whose urgency it
 * carries; in a container, the longest chain of open blockers among its issues, which bounds when
 * the container can be done (the drain forecast's chain, server/queue/forecast.ts).
 */
export const NEIGHBOURHOOD_DEPTH = 3;
const MAX_PER_SIDE = 30;
/** A container's issues drawn at most (the page stays responsive at this size: decision 027). */
export const MAX_MEMBERS = 300;

export interface GraphNode {
  identifier: string;
  title: string;
  status: string;
  effectiveLevel: number;
  critical: boolean;
  center: boolean;
}
export interface GraphEdge {
  from: string;
  to: string;
  critical: boolean;
}
export interface Neighbourhood {
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** Nodes beyond the caps that are not drawn. */
  hidden: number;
  /** Whether the center is a container, its issues drawn. */
  container: boolean;
  layout: LaidOut;
}

/**
 * The walk steps only on issues the viewer reaches: an out-of-scope blocker is a wall, not a
 * bridge, so nothing beyond it is drawn or counted (decision 050: it reads as if it did not exist).
 */
async function reach(db: Db, scope: Reach, issueId: string, direction: "up" | "down") {
  const [from, to] = direction === "up" ? [sql`source_id`, sql`target_id`] : [sql`target_id`, sql`source_id`];
  const seen = inScope(scope, sql`i.project_id`);
  return query<{ id: string; depth: number }>(
    db,
    sql`with recursive walk(id, depth) as (
          select r.${from}, 1 from relations r join issues i on i.id = r.${from}
          where r.${to} = ${issueId} and r.type = 'blocks' and ${seen}
          union
          select r.${from}, walk.depth + 1 from relations r join walk on r.${to} = walk.id join issues i on i.id = r.${from}
          where r.type = 'blocks' and walk.depth < ${NEIGHBOURHOOD_DEPTH} and ${seen}
        )
        select id, min(depth)::int as depth from walk group by id order by min(depth), id`,
  );
}

/** Every issue under a container that the viewer reaches, through nested containers, nearest first. */
async function members(db: Db, scope: Reach, containerId: string) {
  return query<{ id: string }>(
    db,
    sql`with recursive tree(id, depth) as (
          select id, 1 from issues where parent_id = ${containerId} and org_id = ${scope.orgId} and ${inScope(scope, sql`project_id`)}
          union all
          select k.id, t.depth + 1 from tree t join issues k on k.parent_id = t.id
          where t.depth < 10 and ${inScope(scope, sql`k.project_id`)}
        )
        select id from tree order by depth, id limit ${MAX_MEMBERS + 1}`,
  );
}

/** `scope`: what the viewer reaches; issues of other projects are left out (server/orgs/scope.ts). */
export async function neighbourhood(db: Db, cipher: OrgCipher, scope: Reach, center: { id: string; work: boolean }): Promise<Neighbourhood> {
  const [up, down, inside] = await Promise.all([
    reach(db, scope, center.id, "up"),
    reach(db, scope, center.id, "down"),
    center.work ? Promise.resolve([]) : members(db, scope, center.id),
  ]);
  // Distance from the center: blockers negative, gated work positive, a container's issues none.
  const layerOf = new Map<string, number>([[center.id, 0]]);
  for (const u of up.slice(0, MAX_PER_SIDE)) layerOf.set(u.id, -Number(u.depth));
  for (const d of down.slice(0, MAX_PER_SIDE)) layerOf.set(d.id, Number(d.depth));
  const memberIds = new Set(inside.slice(0, MAX_MEMBERS).map((m) => m.id));
  for (const id of memberIds) if (!layerOf.has(id)) layerOf.set(id, 0);
  const hidden =
    Math.max(0, up.length - MAX_PER_SIDE) + Math.max(0, down.length - MAX_PER_SIDE) + (inside.length > MAX_MEMBERS ? 1 : 0);
  const ids = [...layerOf.keys()];

  const [rows, edgeRows] = await Promise.all([
    db
      .select({
        id: issues.id,
        identifier: issues.identifier,
        titleEnc: issues.titleEnc,
        status: issues.status,
        ownLevel: issues.ownLevel,
        effectiveLevel: issues.effectiveLevel,
        number: issues.number,
      })
      .from(issues)
      .where(and(reachable(scope, issues), inArray(issues.id, ids))),
    ids.length < 2
      ? Promise.resolve([])
      : query<{ source_id: string; target_id: string }>(
          db,
          sql`select source_id, target_id from relations
              where type = 'blocks' and source_id in (${idList(ids)}) and target_id in (${idList(ids)})`,
        ),
  ]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const edges = edgeRows.filter((e) => byId.has(e.source_id) && byId.has(e.target_id));
  const blockersOf = new Map<string, string[]>();
  const gatedBy = new Map<string, string[]>();
  for (const e of edges) {
    blockersOf.set(e.target_id, [...(blockersOf.get(e.target_id) ?? []), e.source_id]);
    gatedBy.set(e.source_id, [...(gatedBy.get(e.source_id) ?? []), e.target_id]);
  }

  const criticalEdges = new Set<string>();
  const criticalNodes = new Set<string>([center.id]);
  // Above: the longest chain of open blockers (ties: the more urgent, then the lower number).
  const chainLength = new Map<string, number>();
  const lengthAbove = (id: string): number => {
    const known = chainLength.get(id);
    if (known !== undefined) return known;
    const open = (blockersOf.get(id) ?? []).filter((b) => (layerOf.get(b) ?? 0) < 0 && !isTerminal(byId.get(b)!.status));
    const length = open.length === 0 ? 0 : 1 + Math.max(...open.map(lengthAbove));
    chainLength.set(id, length);
    return length;
  };
  for (let cursor = center.id; ; ) {
    const open = (blockersOf.get(cursor) ?? []).filter((b) => (layerOf.get(b) ?? 0) < 0 && !isTerminal(byId.get(b)!.status));
    if (open.length === 0) break;
    open.sort(
      (a, b) =>
        lengthAbove(b) - lengthAbove(a) ||
        byId.get(b)!.effectiveLevel - byId.get(a)!.effectiveLevel ||
        byId.get(a)!.number - byId.get(b)!.number,
    );
    const next = open[0]!;
    criticalEdges.add(`${next}>${cursor}`);
    criticalNodes.add(next);
    cursor = next;
  }
  // Below: follow the gated issue carrying the same effective level until the one that owns it.
  for (let cursor = center.id; ; ) {
    const node = byId.get(cursor)!;
    if (node.ownLevel >= node.effectiveLevel) break;
    const carrier = (gatedBy.get(cursor) ?? [])
      .filter((g) => (layerOf.get(g) ?? 0) > 0 && !isTerminal(byId.get(g)!.status) && byId.get(g)!.effectiveLevel === node.effectiveLevel)
      .sort((a, b) => byId.get(a)!.number - byId.get(b)!.number)[0];
    if (!carrier) break;
    criticalEdges.add(`${cursor}>${carrier}`);
    criticalNodes.add(carrier);
    cursor = carrier;
  }
  if (memberIds.size > 0) markLongestOpenChain(memberIds, blockersOf, (id) => isTerminal(byId.get(id)?.status ?? "done"), criticalNodes, criticalEdges);

  const nodes = rows
    .map((r) => ({
      identifier: r.identifier,
      title: cipher.decrypt(r.titleEnc) ?? "",
      status: r.status,
      effectiveLevel: r.effectiveLevel,
      critical: criticalNodes.has(r.id),
      center: r.id === center.id,
      layer: layerOf.get(r.id)!,
    }))
    .sort((a, b) => a.layer - b.layer || a.identifier.localeCompare(b.identifier, "en", { numeric: true }))
    .map(({ layer: _layer, ...node }) => node);
  const drawnEdges = edges.map((e) => ({
    from: byId.get(e.source_id)!.identifier,
    to: byId.get(e.target_id)!.identifier,
    critical: criticalEdges.has(`${e.source_id}>${e.target_id}`),
  }));

  return {
    nodes,
    edges: drawnEdges,
    hidden,
    container: !center.work,
    layout: layoutGraph(
      nodes.map((n) => n.identifier),
      drawnEdges,
    ),
  };
}

/** The longest chain of open issues among `within`, each blocking the next (ties: the first found), marked critical. */
function markLongestOpenChain(
  within: Set<string>,
  blockersOf: Map<string, string[]>,
  closed: (id: string) => boolean,
  nodes: Set<string>,
  edges: Set<string>,
) {
  const best = new Map<string, { length: number; from: string | null }>();
  const longest = (id: string): number => {
    const known = best.get(id);
    if (known) return known.length;
    best.set(id, { length: 1, from: null }); // a cycle cannot be stored, but guard the walk anyway
    let entry = { length: 1, from: null as string | null };
    for (const b of blockersOf.get(id) ?? []) {
      if (!within.has(b) || closed(b)) continue;
      const length = longest(b) + 1;
      if (length > entry.length) entry = { length, from: b };
    }
    best.set(id, entry);
    return entry.length;
  };
  let end: string | null = null;
  for (const id of within) {
    if (closed(id)) continue;
    if (end === null || longest(id) > longest(end)) end = id;
  }
  if (end === null || longest(end) < 2) return;
  for (let cursor: string | null = end; cursor !== null; ) {
    nodes.add(cursor);
    const from: string | null = best.get(cursor)!.from;
    if (from !== null) edges.add(`${from}>${cursor}`);
    cursor = from;
  }
}
