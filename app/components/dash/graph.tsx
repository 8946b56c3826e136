import { Link } from "react-router";
import type { Neighbourhood } from "../../../server/dash/graph.ts";

/**
 * The neighbourhood as a server-rendered SVG: blockers in rows above, the issue in the
 * middle, gated work below; the critical chain drawn heavier. Rows are ordered by where
 * their neighbours sit in the row nearer the middle (one barycentre pass), which keeps
 * crossings few in the small graphs shown here. Every node is a link.
 */
const NODE_W = 136;
const NODE_H = 44;
const GAP_X = 20;
const GAP_Y = 48;
const PAD = 12;

function layout(graph: Neighbourhood) {
  const layers = new Map<number, Neighbourhood["nodes"]>();
  for (const node of graph.nodes) layers.set(node.layer, [...(layers.get(node.layer) ?? []), node]);
  const order = [...layers.keys()].sort((a, b) => a - b);
  const widest = Math.max(...[...layers.values()].map((l) => l.length));
  const width = widest * NODE_W + (widest - 1) * GAP_X + PAD * 2;
  const x = new Map<string, number>();
  const neighbours = (id: string) =>
    graph.edges.flatMap((e) => (e.from === id ? [e.to] : e.to === id ? [e.from] : []));
  const place = (layer: number) => {
    const nodes = layers.get(layer)!;
    const score = (id: string) => {
      const placed = neighbours(id).filter((n) => x.has(n)).map((n) => x.get(n)!);
      return placed.length ? placed.reduce((a, b) => a + b, 0) / placed.length : 0;
    };
    nodes.sort((a, b) => score(a.identifier) - score(b.identifier) || Number(b.critical) - Number(a.critical));
    const rowWidth = nodes.length * NODE_W + (nodes.length - 1) * GAP_X;
    nodes.forEach((n, i) => x.set(n.identifier, (width - rowWidth) / 2 + i * (NODE_W + GAP_X)));
  };
  // From the middle outwards, so each row is ordered against one already placed.
  place(0);
  for (const layer of order.filter((l) => l < 0).reverse()) place(layer);
  for (const layer of order.filter((l) => l > 0)) place(layer);
  const y = new Map(order.map((layer, i) => [layer, PAD + i * (NODE_H + GAP_Y)]));
  const height = PAD * 2 + order.length * NODE_H + (order.length - 1) * GAP_Y;
  const position = (id: string) => {
    const node = graph.nodes.find((n) => n.identifier === id)!;
    return { x: x.get(id)!, y: y.get(node.layer)! };
  };
  return { width, height, position };
}

/** What fits under the identifier in a node at 11px: the status, then as much of the title as fits. */
const CAPTION_CHARS = 18;
function nodeCaption(status: string, title: string): string {
  const text = title ? `${status} · ${title}` : status;
  return text.length > CAPTION_CHARS ? `${text.slice(0, CAPTION_CHARS - 1)}…` : text;
}

const statusFill: Record<string, string> = {
  todo: "#ffffff",
  doing: "#e0f2fe",
  blocked: "#ffedd5",
  review: "#ede9fe",
  done: "#d1fae5",
  canceled: "#e7e5e4",
};

export function DependencyGraph({ graph }: { graph: Neighbourhood }) {
  if (graph.nodes.length <= 1) {
    return <p className="text-sm text-stone-600">No dependencies: nothing blocks this issue and it gates nothing.</p>;
  }
  const { width, height, position } = layout(graph);
  return (
    <figure className="flex flex-col gap-2">
      <div className="overflow-x-auto rounded-lg border border-stone-200 bg-stone-50">
        <svg
          role="group"
          aria-label="Dependency neighbourhood: blockers above, gated work below"
          viewBox={`0 0 ${width} ${height}`}
          width={width}
          height={height}
          className="mx-auto block max-w-none"
        >
          <defs>
            <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0,0 L10,5 L0,10 z" fill="#78716c" />
            </marker>
            <marker id="arrow-critical" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0,0 L10,5 L0,10 z" fill="#b91c1c" />
            </marker>
          </defs>
          {graph.edges.map((e) => {
            const a = position(e.from);
            const b = position(e.to);
            const x1 = a.x + NODE_W / 2;
            const y1 = a.y + NODE_H;
            const x2 = b.x + NODE_W / 2;
            const y2 = b.y;
            const bend = Math.max(20, Math.abs(y2 - y1) / 2);
            return (
              <path
                key={`${e.from}>${e.to}`}
                d={`M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2 - 2}`}
                fill="none"
                stroke={e.critical ? "#b91c1c" : "#a8a29e"}
                strokeWidth={e.critical ? 3 : 1.5}
                markerEnd={`url(#${e.critical ? "arrow-critical" : "arrow"})`}
                data-critical={e.critical || undefined}
              />
            );
          })}
          {graph.nodes.map((n) => {
            const p = position(n.identifier);
            const caption = nodeCaption(n.status, n.title);
            return (
              // Named by its <title> (the whole title, also the tooltip), not by an aria-label that the cut caption would contradict.
              <Link key={n.identifier} to={`/dash/issues/${n.identifier}`} className="graph-node">
                <title>{`${n.identifier} ${n.status}: ${n.title}`}</title>
                <rect
                  x={p.x}
                  y={p.y}
                  width={NODE_W}
                  height={NODE_H}
                  rx={6}
                  fill={n.center ? "#1c1917" : (statusFill[n.status] ?? "#fff")}
                  stroke={n.critical ? "#b91c1c" : "#a8a29e"}
                  strokeWidth={n.critical ? 2.5 : 1}
                />
                <text x={p.x + 10} y={p.y + 18} fontSize="13" fontFamily="ui-monospace, monospace" fontWeight="600" fill={n.center ? "#fff" : "#1c1917"}>
                  {n.identifier}
                </text>
                <text x={p.x + 10} y={p.y + 35} fontSize="11" fill={n.center ? "#d6d3d1" : "#57534e"}>
                  {caption}
                </text>
              </Link>
            );
          })}
        </svg>
      </div>
      <figcaption className="text-xs text-stone-600">
        Arrows point from a blocker to the work it gates. <span className="font-medium text-red-800">Red</span>: the critical chain (the
        longest run of open blockers above, and the path to the issue whose urgency this one carries below).
        {graph.hidden > 0 ? ` ${graph.hidden} more issue(s) further away are not drawn.` : ""}
      </figcaption>
    </figure>
  );
}
