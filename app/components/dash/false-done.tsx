import type { FalseDoneRow } from "../../../server/analytics/false-done.ts";
import { FALSE_DONE_RANGE_DAYS, REOPEN_WINDOW_DAYS } from "../../../constants/false-done.ts";
import { duration } from "./format.ts";

const percent = (rate: number | null) => (rate === null ? "–" : `${(rate * 100).toFixed(1)}%`);
const time = (ms: number | null) => (ms === null ? "–" : duration(ms));
const label = (row: FalseDoneRow) => (row.by === "all" ? "every finish" : row.by === "person" ? (row.email ?? row.key ?? "no one") : (row.key ?? "none"));

/**
 * The false-done rate (server/analytics/false-done.ts) as a table, split by runtime, by person
 * and by changeType: what share of the range's finishes CI failed or were reopened within 7
 * days, and how long CI took to pass the rest.
 */
export function FalseDoneTable({ rows }: { rows: FalseDoneRow[] }) {
  const span = `${FALSE_DONE_RANGE_DAYS} days`;
  return (
    <div className="flex flex-col gap-2" data-testid="false-done">
      <p className="text-sm text-muted">
        False-done rate: the share of the finishes of the last {span} that CI failed, or that went back to open within{" "}
        {REOPEN_WINDOW_DAYS} days of finishing (a finish younger than that, or still pending, may still turn false). Time to verified: from the finish to CI passing it.
      </p>
      {/* Seven columns do not fit a phone: the table scrolls in its own box, which a keyboard can reach. */}
      <div className="overflow-x-auto" tabIndex={0} role="region" aria-label="False-done rate table">
        <table className="w-full border-collapse text-left text-sm">
          <caption className="sr-only">False-done rate over the last {span}, by runtime, by person and by changeType</caption>
          <thead className="border-b border-stone-300 text-stone-600">
            <tr>
              <th scope="col" className="px-2 py-2 font-medium">Split</th>
              <th scope="col" className="px-2 py-2 font-medium">Who</th>
              <th scope="col" className="px-2 py-2 text-right font-medium">Finishes</th>
              <th scope="col" className="px-2 py-2 text-right font-medium">False</th>
              <th scope="col" className="px-2 py-2 text-right font-medium">Rate</th>
              <th scope="col" className="px-2 py-2 text-right font-medium">To verified (median)</th>
              <th scope="col" className="px-2 py-2 text-right font-medium">p90</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={`${row.by}:${row.key ?? ""}`} className="border-b border-stone-200" data-testid={`false-done-${row.by}-${row.key ?? "all"}`}>
                <td className="px-2 py-2">{row.by === "all" ? "all" : row.by}</td>
                <td className="px-2 py-2 font-mono">{label(row)}</td>
                <td className="px-2 py-2 text-right tabular-nums">{row.finishes}</td>
                <td className="px-2 py-2 text-right tabular-nums">{row.falseDone}</td>
                <td className="px-2 py-2 text-right tabular-nums">{percent(row.rate)}</td>
                <td className="px-2 py-2 text-right tabular-nums">{time(row.medianToVerifiedMs)}</td>
                <td className="px-2 py-2 text-right tabular-nums">{time(row.p90ToVerifiedMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
