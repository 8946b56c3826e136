/** Words and numbers the Dash shows, shared by its pages (pure: runs on the server and in the browser). */

/** Ranking levels: none 0 < low 1 < medium 2 < high 3 < urgent 4 < breached 5. */
export const LEVEL_NAMES = ["none", "low", "medium", "high", "urgent", "breached"] as const;
export const levelName = (level: number) => LEVEL_NAMES[level] ?? String(level);

export { PRIORITIES, priorityName } from "../../../constants/priorities.ts";

const pad = (n: number) => String(n).padStart(2, "0");

/** A countdown: `29:59`, `1:02:03`, or `-0:04` once past. Fixed shape so ticking never shifts layout. */
export function countdown(ms: number): string {
  const sign = ms < 0 ? "-" : "";
  const total = Math.floor(Math.abs(ms) / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  return h > 0 ? `${sign}${h}:${pad(m)}:${pad(s)}` : `${sign}${m}:${pad(s)}`;
}

/** `12s ago`, `5m ago`, `3h ago`, `2d ago`. */
export function ago(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** A time left until a deadline in words: `3h 20m left`, `2d 4h left`, `5m overdue`. */
export function timeLeft(ms: number): string {
  const past = ms < 0;
  const s = Math.floor(Math.abs(ms) / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const text = d > 0 ? `${d}d ${h}h` : h > 0 ? `${h}h ${m}m` : `${m}m`;
  return past ? `${text} overdue` : `${text} left`;
}

/** A stable, locale-independent timestamp (same on server and client, so hydration matches). */
export function stamp(iso: string | null | undefined): string {
  if (!iso) return "—";
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** A length of time at the scale it is read: `12 min`, `3.5 h`, `2.0 days`. */
export function duration(ms: number): string {
  const m = Math.round(ms / 60_000);
  if (m === 0) return "under a minute";
  return m < 60 ? `${m} min` : m < 48 * 60 ? `${(m / 60).toFixed(1)} h` : `${(m / 1440).toFixed(1)} days`;
}

/** What renewed a lease last (decision 036): its session's own calls, a heartbeat, or nothing since the claim. */
export const renewedByText = (renewedBy: "calls" | "heartbeat" | null) =>
  renewedBy === "calls" ? "by its session's calls" : renewedBy === "heartbeat" ? "by heartbeat" : "at the claim";
