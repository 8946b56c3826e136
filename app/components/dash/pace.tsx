import type { FleetSnapshot } from "../../../server/dash/fleet.ts";

/**
 * The fleet's pace as a picture: finished issues per hour over the last day (one bar an hour,
 * now at the right), with the numbers in words beside it for those who read rather than look, and
 * the drain forecast: when the ready queue and the open backlog would be done, and the critical
 * chain that bounds it.
 */
const W = 480;
const H = 96;
const GAP = 2;

const duration = (ms: number) => {
  const m = Math.round(ms / 60_000);
  return m < 60 ? `${m} min` : m < 48 * 60 ? `${(m / 60).toFixed(1)} h` : `${(m / 1440).toFixed(1)} days`;
};

type Forecast = FleetSnapshot["forecast"];
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function drainWords(f: Forecast): string {
  if (f.open === 0) return "Nothing is open: the queue is drained.";
  if (f.perHour === null || f.readyHours === null || f.openHours === null) {
    return `${plural(f.open, "open issue")}, ${f.ready} ready; ${f.reason}.`;
  }
  const pace = `At ${f.perHour} finished an hour (over the active part of the last ${f.window})`;
  return `${pace} the ${plural(f.ready, "ready issue")} drain in about ${duration(f.readyHours * 3_600_000)}, all ${plural(f.open, "open issue")} in about ${duration(f.openHours * 3_600_000)}.`;
}

export function PacePicture({ pace, forecast }: { pace: FleetSnapshot["pace"]; forecast: Forecast }) {
  const peak = Math.max(1, ...pace.perHour);
  const bar = W / pace.perHour.length;
  return (
    <figure className="flex flex-col gap-3 rounded-lg border border-line bg-surface p-4 sm:flex-row sm:items-end sm:gap-6">
      <svg viewBox={`0 0 ${W} ${H + 14}`} className="h-auto w-full max-w-[30rem]" aria-hidden data-testid="pace-bars">
        {pace.perHour.map((n, i) => {
          const h = (n / peak) * H;
          return (
            <rect key={i} x={i * bar + GAP / 2} y={H - h} width={bar - GAP} height={Math.max(h, n > 0 ? 2 : 0)} rx={2} className="fill-emerald-500">
              <title>{`${n} finished ${23 - i === 0 ? "in the last hour" : `${23 - i} h ago`}`}</title>
            </rect>
          );
        })}
        <line x1={0} x2={W} y1={H + 0.5} y2={H + 0.5} className="stroke-stone-300" />
        <text x={0} y={H + 12} fontSize="10" className="fill-stone-500">24 h ago</text>
        <text x={W} y={H + 12} fontSize="10" textAnchor="end" className="fill-stone-500">now</text>
      </svg>
      <figcaption className="flex flex-col gap-1 text-sm" data-testid="pace-words">
        <span>
          <strong className="tabular-nums">{pace.lastDay}</strong> finished in the last 24 h (<span className="tabular-nums">{pace.lastWeek}</span> this week)
        </span>
        <span className="text-muted">
          {pace.medianClaimToDoneMs !== null ? `Median first claim to done: ${duration(pace.medianClaimToDoneMs)}.` : "No finish in the last day to time."}
        </span>
        <span className="text-muted" data-testid="drain-forecast">{drainWords(forecast)}</span>
        {forecast.criticalChain.length > 1 && (
          <span className="text-muted" data-testid="critical-chain">
            Critical chain ({forecast.criticalChain.length}, one after another):{" "}
            <span className="font-mono text-xs break-words">{forecast.criticalChain.join(" → ")}</span>
          </span>
        )}
        {forecast.containers.length > 0 && (
          <ul className="text-muted" data-testid="container-forecast">
            {forecast.containers.map((c) => (
              <li key={c.identifier}>
                <span className="font-mono text-xs">{c.identifier}</span>: {plural(c.open, "open issue")}
                {c.hours !== null ? `, done in about ${duration(c.hours * 3_600_000)}` : ""}
              </li>
            ))}
          </ul>
        )}
      </figcaption>
    </figure>
  );
}
