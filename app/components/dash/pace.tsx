import { CHART_RANGES } from "../../../constants/chart-ranges.ts";
import { duration } from "./format.ts";
import type { FleetSnapshot } from "../../../server/dash/fleet.ts";

/**
 * The fleet's pace in words over the chosen range (the charts beside it are charts.tsx) and the
 * drain forecast: when the ready queue and the open backlog would be done, and the critical
 * chain that bounds it.
 */
type Forecast = FleetSnapshot["forecast"];
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
const within = (hours: number) => {
  const text = duration(hours * 3_600_000);
  return text === "under a minute" ? "in under a minute" : `in about ${text}`;
};

export function drainWords(f: Forecast): string {
  if (f.open === 0) return "Nothing is open: the queue is drained.";
  if (f.perHour === null || f.readyHours === null || f.openHours === null) {
    return `${plural(f.open, "open issue")}, ${f.ready} ready; ${f.reason}.`;
  }
  const pace = `At ${f.perHour} finished an hour (over the active part of the last ${f.window})`;
  return `${pace} the ${plural(f.ready, "ready issue")} drain ${within(f.readyHours)}, all ${plural(f.open, "open issue")} ${within(f.openHours)}.`;
}

export function PacePicture({ charts, forecast }: { charts: FleetSnapshot["charts"]; forecast: Forecast }) {
  const span = CHART_RANGES[charts.range].label;
  return (
    <div className="flex flex-col gap-1 rounded-lg border border-line bg-surface p-4 text-sm" data-testid="pace-words">
        <span>
          <strong className="tabular-nums">{charts.totals.finished}</strong> finished in the last {span}
        </span>
        <span className="text-muted">
          {charts.totals.medianClaimToDoneMs !== null
            ? `Median first claim to done: ${duration(charts.totals.medianClaimToDoneMs)}.`
            : `No finish in the last ${span} to time.`}
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
                {c.hours !== null ? `, done ${within(c.hours)}` : ""}
              </li>
            ))}
          </ul>
        )}
    </div>
  );
}
