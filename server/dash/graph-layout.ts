import dagre, { type Point } from "@dagrejs/dagre";

/**
 * Positions for the issue page's dependency graph (decision 027), computed on the server so the
 * layout library never reaches the browser: the issues joined by `blocks` edges are laid out by
 * dagre top to bottom (a blocker above what it gates, crossings kept few), and the issues with no
 * edge in the picture (a container's standalone members) are set in a grid under them, since dagre
 * would put them all in one row. Coordinates are top-left corners in SVG user units.
 */
export const NODE_W = 136;
export const NODE_H = 44;
const GAP_X = 20;
const GAP_Y = 48;
const PAD = 12;

export interface LaidOut {
  width: number;
  height: number;
  nodeWidth: number;
  nodeHeight: number;
  nodes: Record<string, { x: number; y: number }>;
  /** Each edge's route, `from>to` keyed, as SVG path data. */
  edges: Record<string, string>;
}

export function layoutGraph(ids: string[], edges: { from: string; to: string }[]): LaidOut {
  const joined = new Set(edges.flatMap((e) => [e.from, e.to]));
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "TB", nodesep: GAP_X, ranksep: GAP_Y, marginx: PAD, marginy: PAD });
  g.setDefaultEdgeLabel(() => ({}));
  for (const id of ids) if (joined.has(id)) g.setNode(id, { width: NODE_W, height: NODE_H });
  for (const e of edges) g.setEdge(e.from, e.to);
  if (joined.size > 0) dagre.layout(g);

  const nodes: LaidOut["nodes"] = {};
  let width = PAD * 2;
  let height = 0;
  for (const id of g.nodes()) {
    const n = g.node(id);
    nodes[id] = { x: n.x - NODE_W / 2, y: n.y - NODE_H / 2 };
  }
  if (joined.size > 0) {
    const graph = g.graph();
    width = Math.max(width, graph.width ?? 0);
    height = graph.height ?? 0;
  }
  const routes: LaidOut["edges"] = {};
  for (const e of g.edges()) {
    const points: Point[] = g.edge(e).points ?? [];
    routes[`${e.v}>${e.w}`] = points.map((p: Point, i: number) => `${i === 0 ? "M" : "L"}${round(p.x)},${round(p.y)}`).join(" ");
  }

  const loose = ids.filter((id) => !joined.has(id));
  if (loose.length > 0) {
    const cols = Math.max(1, Math.min(loose.length, Math.max(4, Math.floor((width - PAD * 2 + GAP_X) / (NODE_W + GAP_X)))));
    const top = height === 0 ? PAD : height;
    loose.forEach((id, i) => {
      nodes[id] = { x: PAD + (i % cols) * (NODE_W + GAP_X), y: top + Math.floor(i / cols) * (NODE_H + GAP_X) };
    });
    const rows = Math.ceil(loose.length / cols);
    width = Math.max(width, PAD * 2 + cols * NODE_W + (cols - 1) * GAP_X);
    height = top + rows * NODE_H + (rows - 1) * GAP_X + PAD;
  }
  return { width: Math.ceil(width), height: Math.ceil(height), nodeWidth: NODE_W, nodeHeight: NODE_H, nodes, edges: routes };
}

const round = (n: number) => Math.round(n * 10) / 10;
