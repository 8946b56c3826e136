/**
 * The Fleet charts' ranges and series (pure, so in constants/: the page's components import it in the browser too).
 * A day is 24 one-hour buckets, a week 28 six-hour buckets, both ending with the current hour.
 */
export const CHART_RANGES = {
  day: { buckets: 24, hours: 1, label: "24 h" },
  week: { buckets: 28, hours: 6, label: "7 days" },
} as const;
export type ChartRange = keyof typeof CHART_RANGES;

/** The statuses the queue depth chart stacks (server/dash/charts-record.ts samples them). */
export const DEPTH_STATUSES = ["ready", "blocked", "doing", "review"] as const;

/** The range a `?range=` value names; anything else is the day. */
export function chartRange(value: string | null): ChartRange {
  return value === "week" ? "week" : "day";
}
