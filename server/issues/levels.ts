import type { SlaState } from "../../db/schema/index.ts";

/**
 * Pure ranking arithmetic. Levels: none 0 < low 1 < medium 2 < high 3 < urgent 4 < breached 5.
 * Priority numbers are the product's: 0 none, 1 urgent, 2 high, 3 medium, 4 low.
 */
export const LEVEL_HIGH = 3;
export const LEVEL_URGENT = 4;
export const LEVEL_BREACHED = 5;

export function levelOfPriority(priority: number): number {
  return priority === 0 ? 0 : 5 - priority;
}

export interface SlaInfo {
  state: SlaState;
  /** The floor deadline pressure puts under the own level (0 when none). */
  floor: number;
  /** When time next moves the issue across a threshold; null when it never will. */
  nextAt: Date | null;
  remainingMs: number | null;
}

/**
 * Deadline pressure over the window from when the deadline was set to the deadline:
 * warning from 75% (floor high), breaching from 90% (floor urgent), breached past due.
 */
export function slaOf(dueAt: Date | null, windowStart: Date | null, now: Date): SlaInfo {
  if (!dueAt) return { state: "none", floor: 0, nextAt: null, remainingMs: null };
  const due = dueAt.getTime();
  const start = Math.min(windowStart?.getTime() ?? due, due);
  const t = now.getTime();
  const remainingMs = due - t;
  const t75 = start + Math.ceil((due - start) * 0.75);
  const t90 = start + Math.ceil((due - start) * 0.9);
  if (t >= due) return { state: "breached", floor: LEVEL_BREACHED, nextAt: null, remainingMs };
  if (t >= t90) return { state: "breaching", floor: LEVEL_URGENT, nextAt: new Date(due), remainingMs };
  if (t >= t75) return { state: "warning", floor: LEVEL_HIGH, nextAt: new Date(t90), remainingMs };
  return { state: "ok", floor: 0, nextAt: new Date(t75), remainingMs };
}

/** How long a review waits before it ranks above everything (decision 073). */
export const REVIEW_DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A review's age floor (decision 073): finished work is accepted before new work starts. Deadline
 * pressure over the day from entering review: at least high from entry, urgent from 90% of it
 * (about 21.6 hours), above urgent past it. `since` is when it entered review, null for any other status.
 */
export function reviewAgeOf(since: Date | null, now: Date): { floor: number; nextAt: Date | null } {
  if (!since) return { floor: 0, nextAt: null };
  const pressure = slaOf(new Date(since.getTime() + REVIEW_DAY_MS), since, now);
  // Its warning (75%) raises nothing a review does not already have: the next moment that moves it is urgent's.
  const nextAt = pressure.state === "ok" ? new Date(since.getTime() + Math.ceil(REVIEW_DAY_MS * 0.9)) : pressure.nextAt;
  return { floor: Math.max(LEVEL_HIGH, pressure.floor), nextAt };
}

/** The earlier of two moments, either possibly absent. */
const earlier = (a: Date | null, b: Date | null) => (a === null ? b : b === null ? a : a.getTime() <= b.getTime() ? a : b);

export function ownLevelOf(priority: number, sla: SlaInfo, reviewFloor = 0): number {
  return Math.max(levelOfPriority(priority), sla.floor, reviewFloor);
}

/**
 * The stored ranking columns an issue's own priority, deadline and review age set (its effective
 * ones follow its graph). `slaNextAt` is the next moment time moves either: the sweep reads it.
 */
export function rankingColumns(priority: number, dueAt: Date | null, dueSetAt: Date | null, terminal: boolean, now: Date, reviewSince: Date | null = null) {
  if (terminal) {
    // A closed issue feels no deadline pressure and gates nothing: it ranks by its priority alone.
    const level = levelOfPriority(priority);
    return { ownLevel: level, effectiveLevel: level, effectiveDueAt: null, slaState: "none" as const, slaNextAt: null };
  }
  const sla = slaOf(dueAt, dueSetAt, now);
  const review = reviewAgeOf(reviewSince, now);
  return { ownLevel: ownLevelOf(priority, sla, review.floor), slaState: sla.state, slaNextAt: earlier(sla.nextAt, review.nextAt) };
}

/** When an issue's review age counts from: its entry into review, while it is in review. */
export const reviewClockOf = (row: { status: string; reviewSince: Date | null }): Date | null => (row.status === "review" ? row.reviewSince : null);

/** What `reviewSinceAfter` reads of an issue: its status and triage, and its stored review_since. */
export interface ReviewClockState {
  /** null: the issue does not exist yet (a create, an import). */
  status: string | null;
  triage: string | null;
  reviewSince: Date | null;
}

/**
 * The one home of `review_since` (decision 073, amended): the moment an issue last became a review
 * a reviewer can take, which a review's age floor counts from. Every path that changes an issue's
 * status or triage (save_issue, intake's triage moves, a person's triage acceptance, the imports)
 * asks it and writes what it answers, with the ranking columns that follow.
 * - In review and not awaiting triage: unchanged while it already was such a review, else `enteredAt`
 *   (now, or the time an import's source says it entered review).
 * - In review but awaiting triage: none. Outside work is never dispatched before a person accepts
 *   it, so its clock starts at the acceptance, not at its filing.
 * - Out of review: the last value is kept (`reviewClockOf` reads none; analytics reads when the last
 *   review began).
 */
export function reviewSinceAfter(before: ReviewClockState, after: { status: string; triage: string | null }, now: Date, enteredAt: Date = now): Date | null {
  if (after.status !== "review") return before.reviewSince;
  if (after.triage === "pending") return null;
  const wasReviewable = before.status === "review" && before.triage !== "pending";
  return wasReviewable ? (before.reviewSince ?? enteredAt) : enteredAt;
}

/** The last millisecond of a calendar date in an IANA time zone. */
export function endOfDayIn(date: string, timeZone: string): Date {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  // Midnight that starts the next day, local time, found by correcting a UTC guess by the zone offset.
  const nextMidnightUtcGuess = Date.UTC(y, m - 1, d + 1);
  const offset = zoneOffsetMs(nextMidnightUtcGuess, timeZone);
  let instant = nextMidnightUtcGuess - offset;
  const offsetAtInstant = zoneOffsetMs(instant, timeZone);
  if (offsetAtInstant !== offset) instant = nextMidnightUtcGuess - offsetAtInstant;
  return new Date(instant - 1);
}

/** One formatter per zone: building one costs far more than formatting with it (an import's due dates, issue 29). */
const zoneFormats = new Map<string, Intl.DateTimeFormat>();

function zoneOffsetMs(utcMs: number, timeZone: string): number {
  let format = zoneFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
    if (zoneFormats.size < 1_000) zoneFormats.set(timeZone, format);
  }
  const parts = format.formatToParts(new Date(utcMs));
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  const asUtc = Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"), get("second"));
  return asUtc - Math.floor(utcMs / 1000) * 1000;
}

/**
 * The branch a claimant works on: the one a checkpoint named, else the one fixed at the first
 * claim (`frozen`, stored when the title changed since), else the title's (`branchName`).
 */
export function issueBranch(identifier: string, title: string, frozen: string | null, named: string | null | undefined): string {
  return named ?? frozen ?? branchName(identifier, title);
}

/** `rtsc-42/fix-the-login-redirect`: the branch named at an issue's first claim. */
export function branchName(identifier: string, title: string): string {
  const slug = title
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48)
    .replace(/-+$/g, "");
  return slug ? `${identifier.toLowerCase()}/${slug}` : identifier.toLowerCase();
}
