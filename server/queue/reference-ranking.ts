/**
 * The reference model's ranking, recomputed from raw facts on every question: deadline
 * pressure, own and effective levels, the dispatch order and the lanes. The concurrency test
 * and the dispatch snapshot use it on their own; the model (reference-model.ts) ranks with it.
 */

export type Status = "todo" | "doing" | "blocked" | "review" | "done" | "canceled";
export type SlaName = "none" | "ok" | "warning" | "breaching" | "breached";

export const isClosed = (status: Status) => status === "done" || status === "canceled";

/** The ranking facts of one issue, as a person would write them down. */
export interface RankFacts {
  key: string;
  number: number;
  work: boolean;
  status: Status;
  /** 0 none, 1 urgent, 2 high, 3 medium, 4 low. */
  priority: number;
  dueAt: number | null;
  /** When the deadline was set (creation when set at creation). */
  windowStart: number | null;
  /** When it last entered review (counted only while it is in review). */
  reviewSince: number | null;
  createdAt: number;
}

export interface Rank {
  sla: SlaName;
  own: number;
  level: number;
  /** Earliest deadline among the issue and everything open it gates. */
  due: number | null;
}

const LEVEL_BY_PRIORITY: Record<number, number> = { 0: 0, 4: 1, 3: 2, 2: 3, 1: 4 };

/** Deadline pressure over the window [windowStart, dueAt], in exact integer arithmetic. */
export function deadlinePressure(dueAt: number | null, windowStart: number | null, now: number): { sla: SlaName; floor: number } {
  if (dueAt === null) return { sla: "none", floor: 0 };
  if (now >= dueAt) return { sla: "breached", floor: 5 };
  const start = Math.min(windowStart ?? dueAt, dueAt);
  const window = dueAt - start;
  const elapsed = now - start;
  if (elapsed * 10 >= window * 9) return { sla: "breaching", floor: 4 };
  if (elapsed * 4 >= window * 3) return { sla: "warning", floor: 3 };
  return { sla: "ok", floor: 0 };
}

const DAY_MS = 86_400_000;

/** A review's age floor: high from entry, urgent once 90% of a day has passed, 5 (above urgent) past a day. */
export function reviewAgeFloor(status: Status, since: number | null, now: number): number {
  if (status !== "review" || since === null) return 0;
  const elapsed = now - since;
  if (elapsed >= DAY_MS) return 5;
  return elapsed * 10 >= DAY_MS * 9 ? 4 : 3;
}

/** Own level, effective level and effective deadline of every issue. `blocks` pairs are [blocker, blocked]. */
export function rankAll(issues: readonly RankFacts[], blocks: Iterable<readonly [string, string]>, now: number): Map<string, Rank> {
  const byKey = new Map(issues.map((i) => [i.key, i]));
  const gates = new Map<string, string[]>();
  for (const [source, target] of blocks) gates.set(source, [...(gates.get(source) ?? []), target]);
  const ranks = new Map<string, Rank>();
  const visit = (key: string): Rank => {
    const known = ranks.get(key);
    if (known) return known;
    const issue = byKey.get(key)!;
    const pressure = deadlinePressure(issue.dueAt, issue.windowStart, now);
    // A closed issue feels no deadline pressure: it ranks by its priority alone.
    const own = isClosed(issue.status)
      ? LEVEL_BY_PRIORITY[issue.priority]!
      : Math.max(LEVEL_BY_PRIORITY[issue.priority]!, pressure.floor, reviewAgeFloor(issue.status, issue.reviewSince, now));
    let level = own;
    let due = isClosed(issue.status) ? null : issue.dueAt;
    if (!isClosed(issue.status)) {
      for (const target of gates.get(key) ?? []) {
        if (isClosed(byKey.get(target)!.status)) continue;
        const gated = visit(target);
        level = Math.max(level, gated.level);
        if (gated.due !== null && (due === null || gated.due < due)) due = gated.due;
      }
    }
    const rank = { sla: isClosed(issue.status) ? ("none" as const) : pressure.sla, own, level, due };
    ranks.set(key, rank);
    return rank;
  };
  for (const issue of issues) visit(issue.key);
  return ranks;
}

/** The total order (docs/architecture.md#order): level, review first, earliest deadline, oldest, lowest number. */
export function dispatchCompare(a: RankFacts & { rank: Rank }, b: RankFacts & { rank: Rank }): number {
  if (a.rank.level !== b.rank.level) return b.rank.level - a.rank.level;
  const ar = a.status === "review" ? 0 : 1;
  const br = b.status === "review" ? 0 : 1;
  if (ar !== br) return ar - br;
  const ad = a.rank.due ?? Number.POSITIVE_INFINITY;
  const bd = b.rank.due ?? Number.POSITIVE_INFINITY;
  if (ad !== bd) return ad - bd;
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  return a.number - b.number;
}

/** An issue as dispatch sees it: ranking facts plus lane and lease. */
export interface DispatchFacts extends RankFacts {
  assignee: string | null;
  /** The person whose work went into review. */
  submitter: string | null;
  leaseLive: boolean;
}

/** Dispatchable issues passing `lane`, in dispatch order, each with its rank. */
export function readyInOrder<T extends DispatchFacts>(
  issues: readonly T[],
  blocks: readonly (readonly [string, string])[],
  now: number,
  lane: (issue: T) => boolean = () => true,
): (T & { rank: Rank })[] {
  const ranks = rankAll(issues, blocks, now);
  const status = new Map(issues.map((i) => [i.key, i.status]));
  const openBlocked = new Set(blocks.filter(([source]) => !isClosed(status.get(source)!)).map(([, target]) => target));
  return issues
    .filter((i) => i.work && ["todo", "doing", "review"].includes(i.status) && !openBlocked.has(i.key) && !i.leaseLive && lane(i))
    .map((i) => ({ ...i, rank: ranks.get(i.key)! }))
    .sort(dispatchCompare);
}

/** Lanes: mine (the person's own and unassigned work), all, others (someone else's); none hands a person their own work up for review. */
export const lanes = (person: string) => ({
  mine: (i: DispatchFacts) => (i.assignee === null || i.assignee === person) && !(i.status === "review" && i.submitter === person),
  all: (i: DispatchFacts) => !(i.status === "review" && i.submitter === person),
  others: (i: DispatchFacts) => i.assignee !== null && i.assignee !== person && !(i.status === "review" && i.submitter === person),
});
