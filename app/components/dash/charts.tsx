import type { ReactNode } from "react";
import { Link } from "react-router";
import type { ChartBucket, FleetCharts } from "../../../server/dash/charts.ts";
import { CHART_RANGES, DEPTH_STATUSES, type ChartRange } from "../../../constants/chart-ranges.ts";
import { focusRing } from "./bits.tsx";
import { duration } from "./format.ts";

/**
 * The Fleet page's charts, server-rendered inline SVG (decision 027): each a <figure> whose SVG
 * is an image named by its visible heading, with a sentence under it saying what it shows, so a reader
 * needs neither the picture nor a pointer. They scale to their box (viewBox, width 100%), and
 * take their colours from the palette the dark mode mirrors (app/app.css).
 */
const W = 480;
const H = 96;
const AXIS = 14;

const series = {
  finished: "fill-emerald-500",
  reclaimed: "fill-red-500",
  staleRefused: "fill-amber-500",
  ready: "fill-sky-500",
  blocked: "fill-orange-500",
  doing: "fill-emerald-500",
  review: "fill-violet-500",
} as const;
const swatch: Record<keyof typeof series, string> = {
  finished: "bg-emerald-500",
  reclaimed: "bg-red-500",
  staleRefused: "bg-amber-500",
  ready: "bg-sky-500",
  blocked: "bg-orange-500",
  doing: "bg-emerald-500",
  review: "bg-violet-500",
};
const seriesLabel: Record<keyof typeof series, string> = {
  finished: "finished",
  reclaimed: "reclaimed",
  staleRefused: "stale writes refused",
  ready: "ready",
  blocked: "blocked",
  doing: "doing",
  review: "in review",
};

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
const clockTime = (iso: string) => iso.slice(11, 16);
const bucketName = (b: ChartBucket, hours: number) => (hours === 1 ? `hour from ${clockTime(b.start)} UTC` : `${hours} h from ${b.start.slice(5, 10)} ${clockTime(b.start)} UTC`);

function Axis({ range }: { range: ChartRange }) {
  return (
    <>
      <line x1={0} x2={W} y1={H + 0.5} y2={H + 0.5} className="stroke-stone-300" />
      <text x={0} y={H + 12} fontSize="10" className="fill-stone-500">{CHART_RANGES[range].label} ago</text>
      <text x={W} y={H + 12} fontSize="10" textAnchor="end" className="fill-stone-500">now</text>
    </>
  );
}

/** Bars side by side (one series each) or stacked, one group per bucket. */
function Bars<K extends keyof typeof series>({
  charts,
  keys,
  value,
  stacked = false,
}: {
  charts: FleetCharts;
  keys: readonly K[];
  value: (b: ChartBucket, key: K) => number;
  stacked?: boolean;
}) {
  const slot = W / charts.buckets.length;
  const peak = Math.max(1, ...charts.buckets.map((b) => (stacked ? keys.reduce((a, k) => a + value(b, k), 0) : Math.max(...keys.map((k) => value(b, k))))));
  const width = stacked ? slot - 2 : (slot - 2) / keys.length;
  return (
    <>
      {charts.buckets.map((b, i) => {
        let base = H;
        return (
          <g key={b.start}>
            <title>{`${bucketName(b, charts.bucketHours)}: ${keys.map((k) => `${value(b, k)} ${seriesLabel[k]}`).join(", ")}`}</title>
            {keys.map((k, j) => {
              const n = value(b, k);
              const h = n > 0 ? Math.max(2, (n / peak) * H) : 0;
              const x = i * slot + 1 + (stacked ? 0 : j * width);
              const y = stacked ? base - h : H - h;
              if (stacked) base -= h;
              return <rect key={k} x={x} y={y} width={Math.max(1, width)} height={h} className={series[k]} />;
            })}
          </g>
        );
      })}
    </>
  );
}

function Legend({ keys }: { keys: readonly (keyof typeof series)[] }) {
  return (
    <span className="flex flex-wrap gap-x-3 text-xs text-muted" aria-hidden>
      {keys.map((k) => (
        <span key={k} className="inline-flex items-center gap-1">
          <span className={`inline-block size-2.5 rounded-sm ${swatch[k]}`} />
          {seriesLabel[k]}
        </span>
      ))}
    </span>
  );
}

function Chart({ id, title, summary, children, legend }: { id: string; title: string; summary: string; children: ReactNode; legend?: ReactNode }) {
  return (
    <figure className="flex min-w-0 flex-col gap-2 rounded-lg border border-line bg-surface p-4" data-testid={`chart-${id}`}>
      {/* The title is shown, not only read out: four charts side by side need naming at a glance. */}
      <h3 id={`chart-${id}-title`} className="text-sm font-medium">
        {title}
      </h3>
      <svg viewBox={`0 0 ${W} ${H + AXIS}`} className="h-auto w-full" role="img" aria-labelledby={`chart-${id}-title`}>
        {children}
      </svg>
      {legend}
      <figcaption className="text-sm" data-testid={`chart-${id}-summary`}>
        {summary}
      </figcaption>
    </figure>
  );
}

/** The median claim to done of each bucket with finishes, as dots joined by a line. */
function MedianLine({ charts }: { charts: FleetCharts }) {
  const slot = W / charts.buckets.length;
  const peak = Math.max(1, ...charts.buckets.map((b) => b.medianMs ?? 0));
  const points = charts.buckets.flatMap((b, i) => (b.medianMs === null ? [] : [{ b, x: i * slot + slot / 2, y: H - (b.medianMs / peak) * (H - 4) }]));
  return (
    <>
      {points.length > 1 ? <polyline points={points.map((p) => `${p.x},${p.y}`).join(" ")} fill="none" className="stroke-sky-500" strokeWidth={1.5} /> : null}
      {points.map((p) => (
        <circle key={p.b.start} cx={p.x} cy={p.y} r={3} className="fill-sky-500">
          <title>{`${bucketName(p.b, charts.bucketHours)}: median ${duration(p.b.medianMs!)} from first claim to done (${p.b.finished} finished)`}</title>
        </circle>
      ))}
    </>
  );
}

export function RangeToggle({ range }: { range: ChartRange }) {
  return (
    <nav aria-label="Chart range" className="inline-flex rounded-md border border-line text-sm">
      {(Object.keys(CHART_RANGES) as ChartRange[]).map((r) => (
        <Link
          key={r}
          to={`?range=${r}`}
          preventScrollReset
          aria-current={r === range ? "page" : undefined}
          className={`px-3 py-1 ${focusRing} ${r === range ? "bg-stone-900 text-white" : "text-stone-700 hover:bg-stone-100"}`}
        >
          {r === "day" ? "Last day" : "Last week"}
        </Link>
      ))}
    </nav>
  );
}

export function FleetChartsGrid({ charts }: { charts: FleetCharts }) {
  const { totals, bucketHours, range } = charts;
  const span = CHART_RANGES[range].label;
  const per = bucketHours === 1 ? "an hour" : `per ${bucketHours} h`;
  const latest = [...charts.buckets].reverse().find((b) => b.depth !== null)?.depth ?? null;
  const busiest = charts.buckets.reduce((a, b) => (b.finished > a.finished ? b : a), charts.buckets[0]!);
  return (
    <div className="grid grid-cols-1 gap-3 lg:grid-cols-2" data-testid="fleet-charts" data-range={range}>
      <Chart
        id="finished"
        title={`Issues finished ${per}, last ${span}`}
        summary={
          totals.finished === 0
            ? `Nothing finished in the last ${span}.`
            : `${plural(totals.finished, "issue")} finished in the last ${span}; the busiest ${bucketName(busiest, bucketHours)} had ${busiest.finished}.`
        }
        legend={<Legend keys={["finished"]} />}
      >
        <Bars charts={charts} keys={["finished"] as const} value={(b) => b.finished} />
        <Axis range={range} />
      </Chart>
      <Chart
        id="claim-to-done"
        title={`Median time from first claim to done, ${per}, last ${span}`}
        summary={
          totals.medianClaimToDoneMs === null
            ? `No finish in the last ${span} to time.`
            : `Median first claim to done over the last ${span}: ${duration(totals.medianClaimToDoneMs)}.`
        }
      >
        <MedianLine charts={charts} />
        <Axis range={range} />
      </Chart>
      <Chart
        id="refusals"
        title={`Reclaims of lapsed leases and stale writes refused, ${per}, last ${span}`}
        summary={`${plural(totals.reclaimed, "lease")} reclaimed after lapsing and ${plural(totals.staleRefused, "stale write")} refused in the last ${span}.`}
        legend={<Legend keys={["reclaimed", "staleRefused"]} />}
      >
        <Bars charts={charts} keys={["reclaimed", "staleRefused"] as const} value={(b, k) => b[k]} />
        <Axis range={range} />
      </Chart>
      <Chart
        id="depth"
        title={`Open issues by status, sampled hourly, last ${span}`}
        summary={
          latest === null
            ? `No sample of the queue in the last ${span} yet (one is taken every 10 minutes).`
            : `At the latest sample: ${DEPTH_STATUSES.map((s) => `${latest[s]} ${seriesLabel[s]}`).join(", ")}.`
        }
        legend={<Legend keys={DEPTH_STATUSES} />}
      >
        <Bars charts={charts} keys={DEPTH_STATUSES} value={(b, k) => b.depth?.[k] ?? 0} stacked />
        <Axis range={range} />
      </Chart>
    </div>
  );
}
