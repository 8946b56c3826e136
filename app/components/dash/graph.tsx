import { Link } from "react-router";
import type { Neighbourhood } from "../../../server/dash/graph.ts";

/**
 * The dependency graph as a server-rendered SVG, at the positions the server laid out with dagre
 * (server/dash/graph-layout.ts): blockers above what they gate, the critical chain drawn heavier
 * and red, every node a link. A large graph (a container of hundreds of issues) keeps its natural
 * size and scrolls inside its own box, so the page never overflows.
 */
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
  const { width, height, nodeWidth, nodeHeight, nodes: at, edges: routes } = graph.layout;
  return (
    <figure className="flex flex-col gap-2">
      <div className="max-h-[36rem] overflow-auto rounded-lg border border-stone-200 bg-stone-50" tabIndex={0} role="region" aria-label="Dependency graph (scrolls)">
        <svg
          role="group"
          aria-label={
            graph.container
              ? `Dependency graph of the ${graph.nodes.length - 1} issues in this container`
              : "Dependency neighbourhood: blockers above, gated work below"
          }
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
          {graph.edges.map((e) => (
            <path
              key={`${e.from}>${e.to}`}
              d={routes[`${e.from}>${e.to}`]}
              fill="none"
              stroke={e.critical ? "#b91c1c" : "#a8a29e"}
              strokeWidth={e.critical ? 3 : 1.5}
              markerEnd={`url(#${e.critical ? "arrow-critical" : "arrow"})`}
              data-critical={e.critical || undefined}
            />
          ))}
          {graph.nodes.map((n) => {
            const p = at[n.identifier]!;
            const caption = nodeCaption(n.status, n.title);
            return (
              // Named by its <title> (the whole title, also the tooltip), not by an aria-label that the cut caption would contradict.
              <Link key={n.identifier} to={`/dash/issues/${n.identifier}`} className="graph-node">
                <title>{`${n.identifier} ${n.status}: ${n.title}`}</title>
                <rect
                  x={p.x}
                  y={p.y}
                  width={nodeWidth}
                  height={nodeHeight}
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
        Arrows point from a blocker to the work it gates. <span className="font-medium text-red-800">Red</span>: the critical chain (
        {graph.container
          ? "the longest run of open blockers among this container's issues, which bounds when it can be done"
          : "the longest run of open blockers above, and the path to the issue whose urgency this one carries below"}
        ).
        {graph.hidden > 0 ? ` ${graph.hidden} more issue(s) further away are not drawn.` : ""}
      </figcaption>
    </figure>
  );
}
