import type { CostRow, FlowRow } from "../../../server/analytics/overview.ts";
import { IssueLink } from "./bits.tsx";
import { duration } from "./format.ts";

/** The Analytics page's sections (app/routes/dash.analytics.tsx): each chart has a table beside it for screen readers. */

const time = (ms: number | null) => (ms === null ? "–" : duration(ms));
const usd = (micro: number) => `$${(micro / 1_000_000).toFixed(micro % 10_000 === 0 ? 2 : 4)}`;
const splitName = (row: { by: string; key: string | null }) => (row.by === "all" ? "all" : row.by === "changeType" ? "kind" : row.by);
const keyName = (row: { by: string; key: string | null }) => (row.by === "all" ? "every issue" : (row.key ?? (row.by === "person" ? "no person" : "no issue")));
const th = "px-2 py-2 font-medium";
const count = (n: number, one: string) => `${n} ${n === 1 ? one : `${one}s`}`;
const num = "px-2 py-2 text-right tabular-nums";

/** A scrolling box a keyboard can reach: the wide tables do not fit a phone. */
function Scroll({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="overflow-x-auto" tabIndex={0} role="region" aria-label={label}>
      {children}
    </div>
  );
}

export function FinishedPerDay({ from, perDay }: { from: string; perDay: number[] }) {
  const start = new Date(from).getTime();
  const days = perDay.map((finished, i) => ({ day: new Date(start + i * 86_400_000).toISOString().slice(0, 10), finished }));
  const most = Math.max(1, ...perDay);
  const total = perDay.reduce((a, b) => a + b, 0);
  const W = 600;
  const H = 120;
  const w = W / Math.max(1, days.length);
  return (
    <section aria-labelledby="per-day-heading" className="flex flex-col gap-2">
      <h2 id="per-day-heading" className="text-lg font-semibold">Finished per day</h2>
      <svg viewBox={`0 0 ${W} ${H}`} className="h-auto w-full max-w-3xl" role="img" aria-label={`${total} finished over ${days.length} days; the most in a day: ${Math.max(0, ...perDay)}.`}>
        {days.map((d, i) => {
          const h = (d.finished / most) * (H - 4);
          return <rect key={d.day} x={i * w + w * 0.1} y={H - h} width={w * 0.8} height={h} className="fill-emerald-700" />;
        })}
      </svg>
      <details>
        <summary className="cursor-pointer text-sm">Finished per day as a table</summary>
        <table className="mt-2 border-collapse text-left text-sm" data-testid="per-day">
          <caption className="sr-only">Issues finished on each day, oldest first (days counted back from now)</caption>
          <thead className="border-b border-stone-300 text-stone-600">
            <tr>
              <th scope="col" className={th}>Day from</th>
              <th scope="col" className={`${th} text-right`}>Finished</th>
            </tr>
          </thead>
          <tbody>
            {days.map((d) => (
              <tr key={d.day} className="border-b border-stone-200">
                <td className="px-2 py-2">{d.day}</td>
                <td className={num}>{d.finished}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </section>
  );
}

export function FlowTable({ rows }: { rows: FlowRow[] }) {
  return (
    <section aria-labelledby="flow-heading" className="flex flex-col gap-2">
      <h2 id="flow-heading" className="text-lg font-semibold">Flow and time, by kind of change and by runtime</h2>
      <Scroll label="Flow and time table">
        <table className="w-full border-collapse text-left text-sm" data-testid="analytics-flow">
          <caption className="sr-only">Issues created, finished and canceled, cycle time, lead time and time in review (p50 and p90), by kind of change and by runtime</caption>
          <thead className="border-b border-stone-300 text-stone-600">
            <tr>
              <th scope="col" className={th}>Split</th>
              <th scope="col" className={th}>Which</th>
              <th scope="col" className={`${th} text-right`}>Created</th>
              <th scope="col" className={`${th} text-right`}>Finished</th>
              <th scope="col" className={`${th} text-right`}>Canceled</th>
              <th scope="col" className={`${th} text-right`}>Cycle p50</th>
              <th scope="col" className={`${th} text-right`}>Cycle p90</th>
              <th scope="col" className={`${th} text-right`}>Lead p50</th>
              <th scope="col" className={`${th} text-right`}>Lead p90</th>
              <th scope="col" className={`${th} text-right`}>Reviewed</th>
              <th scope="col" className={`${th} text-right`}>Review p50</th>
              <th scope="col" className={`${th} text-right`}>Review p90</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={`${row.by}:${row.key ?? ""}`} className="border-b border-stone-200" data-testid={`flow-${row.by}-${row.key ?? "all"}`}>
                <td className="px-2 py-2">{splitName(row)}</td>
                <td className="px-2 py-2 font-mono">{keyName(row)}</td>
                <td className={num}>{row.created}</td>
                <td className={num}>{row.finished}</td>
                <td className={num}>{row.canceled}</td>
                <td className={num}>{time(row.cycleP50Ms)}</td>
                <td className={num}>{time(row.cycleP90Ms)}</td>
                <td className={num}>{time(row.leadP50Ms)}</td>
                <td className={num}>{time(row.leadP90Ms)}</td>
                <td className={num}>{row.reviewed}</td>
                <td className={num}>{time(row.reviewP50Ms)}</td>
                <td className={num}>{time(row.reviewP90Ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Scroll>
    </section>
  );
}

export function CostTable({ cost }: { cost: { microCredits: number; perFinishedMicroCredits: number | null; rows: CostRow[] } }) {
  return (
    <section aria-labelledby="cost-heading" className="flex flex-col gap-2">
      <h2 id="cost-heading" className="text-lg font-semibold">Cost</h2>
      <p className="text-sm" data-testid="analytics-cost">
        {usd(cost.microCredits)} charged over the range{cost.perFinishedMicroCredits === null ? "" : `, ${usd(cost.perFinishedMicroCredits)} per issue finished`}.
      </p>
      <table className="w-full max-w-xl border-collapse text-left text-sm">
        <caption className="sr-only">Charges over the range by kind of change, by runtime and by person</caption>
        <thead className="border-b border-stone-300 text-stone-600">
          <tr>
            <th scope="col" className={th}>Split</th>
            <th scope="col" className={th}>Which</th>
            <th scope="col" className={`${th} text-right`}>Charged</th>
          </tr>
        </thead>
        <tbody>
          {cost.rows.map((row) => (
            <tr key={`${row.by}:${row.key ?? ""}`} className="border-b border-stone-200">
              <td className="px-2 py-2">{splitName(row)}</td>
              <td className="px-2 py-2 font-mono">{keyName(row)}</td>
              <td className={num}>{usd(row.microCredits)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/**
 * A horizontal bar per row, longest first, with the same rows as a table beside it for screen
 * readers (the chart itself is one image with a one-line summary).
 */
function Bars({ id, title, summary, caption, unit, bars, testId }: {
  id: string;
  title: string;
  summary: string;
  caption: string;
  unit: string;
  bars: { name: React.ReactNode; key: string; value: number; text: string }[];
  testId: string;
}) {
  const most = Math.max(1, ...bars.map((b) => b.value));
  const W = 600;
  const row = 22;
  const H = Math.max(row, bars.length * row);
  return (
    <section aria-labelledby={`${id}-heading`} className="flex flex-col gap-2">
      <h2 id={`${id}-heading`} className="text-lg font-semibold">{title}</h2>
      <div className="grid gap-4 lg:grid-cols-2">
        <svg viewBox={`0 0 ${W} ${H}`} className="h-auto w-full max-w-3xl" role="img" aria-label={summary}>
          {bars.map((b, i) => (
            <rect key={b.key} x={0} y={i * row + 3} width={Math.max(2, (b.value / most) * W)} height={row - 6} className="fill-sky-700" />
          ))}
        </svg>
        <Scroll label={`${title} table`}>
          <table className="w-full border-collapse text-left text-sm" data-testid={testId}>
            <caption className="sr-only">{caption}</caption>
            <thead className="border-b border-stone-300 text-stone-600">
              <tr>
                <th scope="col" className={th}>Which</th>
                <th scope="col" className={`${th} text-right`}>{unit}</th>
              </tr>
            </thead>
            <tbody>
              {bars.map((b) => (
                <tr key={b.key} className="border-b border-stone-200">
                  <td className="px-2 py-2 break-words">{b.name}</td>
                  <td className={num}>{b.text}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      </div>
    </section>
  );
}

type ReviewedIssue = { identifier: string; title: string; reviewMs: number | null };

/** The range's accepted reviews, longest in review first (analytics_issues' `review` figure), beside the p50 and p90. */
export function TimeInReview({ issues, all }: { issues: ReviewedIssue[]; all: FlowRow | undefined }) {
  const shown = issues.filter((i) => i.reviewMs !== null);
  const summary =
    shown.length === 0
      ? "No review was accepted in this range."
      : `${count(all?.reviewed ?? shown.length, "review")} accepted; p50 ${time(all?.reviewP50Ms ?? null)}, p90 ${time(all?.reviewP90Ms ?? null)}; the longest ${time(shown[0]!.reviewMs)}.`;
  return (
    <Bars
      id="review"
      title="Time in review"
      summary={summary}
      caption="Accepted reviews, the longest time from entering review to done first"
      unit="In review"
      testId="analytics-review"
      bars={shown.map((i) => ({ key: i.identifier, value: i.reviewMs!, text: time(i.reviewMs), name: <><IssueLink identifier={i.identifier} /> {i.title}</> }))}
    />
  );
}

/** What each person's keys and sessions were charged over the range (owners and admins, billing on). */
export function CostPerPerson({ rows }: { rows: CostRow[] }) {
  const people = rows.filter((r) => r.by === "person");
  if (people.length === 0) return null;
  const total = people.reduce((a, r) => a + r.microCredits, 0);
  return (
    <Bars
      id="cost-person"
      title="Cost per person"
      summary={`${usd(total)} charged to ${people.length} ${people.length === 1 ? "person" : "people"}; the most: ${usd(people[0]!.microCredits)}.`}
      caption="Charges over the range by the person each key or session acts for, the most first"
      unit="Charged"
      testId="analytics-cost-person"
      bars={people.map((r) => ({ key: r.key ?? "", value: r.microCredits, text: usd(r.microCredits), name: <span className="font-mono">{keyName(r)}</span> }))}
    />
  );
}

type SlowIssue = { identifier: string; title: string; changeType: string | null; runtime: string | null; cycleMs: number | null; leadMs: number | null };

export function SlowestTable({ issues }: { issues: SlowIssue[] }) {
  return (
    <section aria-labelledby="slowest-heading" className="flex flex-col gap-2">
      <h2 id="slowest-heading" className="text-lg font-semibold">Slowest finishes</h2>
      {issues.length === 0 ? (
        <p className="text-sm text-stone-600">Nothing finished in this range.</p>
      ) : (
        <Scroll label="Slowest finishes table">
          <table className="w-full border-collapse text-left text-sm" data-testid="analytics-slowest">
            <caption className="sr-only">The range's finishes with the longest lead time first</caption>
            <thead className="border-b border-stone-300 text-stone-600">
              <tr>
                <th scope="col" className={th}>Issue</th>
                <th scope="col" className={th}>Title</th>
                <th scope="col" className={th}>Kind</th>
                <th scope="col" className={th}>Runtime</th>
                <th scope="col" className={`${th} text-right`}>Cycle</th>
                <th scope="col" className={`${th} text-right`}>Lead</th>
              </tr>
            </thead>
            <tbody>
              {issues.map((i) => (
                <tr key={i.identifier} className="border-b border-stone-200">
                  <td className="px-2 py-2"><IssueLink identifier={i.identifier} /></td>
                  <td className="px-2 py-2 break-words">{i.title}</td>
                  <td className="px-2 py-2">{i.changeType ?? "none"}</td>
                  <td className="px-2 py-2 font-mono">{i.runtime ?? "–"}</td>
                  <td className={num}>{time(i.cycleMs)}</td>
                  <td className={num}>{time(i.leadMs)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
    </section>
  );
}

export function Definitions({ definitions }: { definitions: Record<string, string> }) {
  return (
    <section aria-labelledby="definitions-heading" className="flex flex-col gap-2">
      <h2 id="definitions-heading" className="text-lg font-semibold">What each figure means</h2>
      <dl className="grid gap-x-4 gap-y-1 text-sm sm:grid-cols-[max-content_1fr]">
        {Object.entries(definitions).map(([name, text]) => (
          <div key={name} className="contents">
            <dt className="font-medium">{name}</dt>
            <dd className="text-stone-700">{text}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
