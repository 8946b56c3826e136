import { and, eq, inArray, sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { issues } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { isTerminal } from "../issues/store.ts";
import { idList } from "../issues/ranking.ts";

/**
 * An issue's neighbourhood in the dependency graph, laid out in layers: its blockers
 * above (layer -1 blocks it directly, -2 blocks those, ...), what it gates below. The
 * critical chain is marked: above, the longest run of open blockers that must finish
 * before it can start; below, the path to the issue whose urgency it carries.
 */
export const NEIGHBOURHOOD_DEPTH = 3;
const MAX_PER_SIDE = 30;

export interface GraphNode {
  identifier: string;
  title: string;
  status: string;
  layer: number;
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
}

async function reach(db: Db, issueId: string, direction: "up" | "down") {
  const [from, to] = direction === "up" ? [sql`source_id`, sql`target_id`] : [sql`target_id`, sql`source_id`];
  return query<{ id: string; depth: number }>(
    db,
    sql`with recursive walk(id, depth) as (
          select ${from}, 1 from relations where ${to} = ${issueId} and type = 'blocks'
          union
          select r.${from}, walk.depth + 1 from relations r join walk on r.${to} = walk.id
          where r.type = 'blocks' and walk.depth < ${NEIGHBOURHOOD_DEPTH}
        )
        select id, min(depth)::int as depth from walk group by id order by min(depth), id`,
  );
}

export async function neighbourhood(db: Db, cipher: OrgCipher, orgId: string, center: { id: string }): Promise<Neighbourhood> {
  const [up, down] = await Promise.all([reach(db, center.id, "up"), reach(db, center.id, "down")]);
  const layerOf = new Map<string, number>([[center.id, 0]]);
  for (const u of up.slice(0, MAX_PER_SIDE)) layerOf.set(u.id, -Number(u.depth));
  for (const d of down.slice(0, MAX_PER_SIDE)) layerOf.set(d.id, Number(d.depth));
  const hidden = Math.max(0, up.length - MAX_PER_SIDE) + Math.max(0, down.length - MAX_PER_SIDE);
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
      .where(and(eq(issues.orgId, orgId), inArray(issues.id, ids))),
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

  return {
    nodes: rows
      .map((r) => ({
        identifier: r.identifier,
        title: cipher.decrypt(r.titleEnc) ?? "",
        status: r.status,
        layer: layerOf.get(r.id)!,
        effectiveLevel: r.effectiveLevel,
        critical: criticalNodes.has(r.id),
        center: r.id === center.id,
      }))
      .sort((a, b) => a.layer - b.layer || a.identifier.localeCompare(b.identifier, "en", { numeric: true })),
    edges: edges.map((e) => ({
      from: byId.get(e.source_id)!.identifier,
      to: byId.get(e.target_id)!.identifier,
      critical: criticalEdges.has(`${e.source_id}>${e.target_id}`),
    })),
    hidden,
  };
}
