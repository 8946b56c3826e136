import { is, sql, SQL, type Column } from "drizzle-orm";
import { openStatuses } from "../../constants/statuses.ts";

/**
 * The dispatch rule, written once: which issues may be handed out, in whose lanes, and in
 * what order (docs/architecture.md, "Dispatch"). Every TypeScript reader builds its SQL from
 * these (the queue, list_issues, the Dash's queue, the dispatch indexes, the benchmarks). The
 * PL/pgSQL dispatch functions hold the one copy that cannot import them;
 * server/queue/dispatch-sql.test.ts reads those back from the database and fails when they
 * drift from what these render.
 *
 * Each part takes the issue columns to read (the `issues` table, an alias of it, or the
 * columns an index is built on) and its operands as SQL, so one definition renders for a
 * query, an index and a function body alike.
 */
export type DispatchColumns<C extends Column = Column> = Record<
  | "work"
  | "status"
  | "openBlockerCount"
  | "leaseExpiresAt"
  | "leaseCheckAt"
  | "assigneeId"
  | "submitterId"
  | "effectiveLevel"
  | "effectiveDueAt"
  | "createdAt"
  | "number"
  | "triage",
  C
>;

/**
 * Still in play (not done or canceled), as `status in (the open statuses)` rather than `not in`
 * the terminal ones: an index on (org_id, status) then seeks to an org's open issues instead of
 * reading every finished one, so these reads stay proportional to open work as finished work piles up.
 */
export function isOpen(status: Column | SQL): SQL {
  return sql`${status} in ${sql.raw(`(${openStatuses.map((s) => `'${s}'`).join(", ")})`)}`;
}

/**
 * Holds what it blocks back: open, or finished and still awaiting CI's verification (decision
 * 045). Every blocked-count and every "open blockers" read goes through this, so a pending
 * finish counts in its dependents' open_blocker_count until it passes.
 */
export function gatesDependents(status: Column | SQL, verification: Column | SQL): SQL {
  return sql`(${isOpen(status)} or ${verification} is not distinct from 'pending')`;
}

/** The statuses work is dispatched in. */
export const DISPATCH_STATUSES = ["todo", "doing", "review"] as const;

/** What a ranked issue is compared by, in memory. */
export interface Ranked {
  effectiveLevel: number;
  status: string;
  effectiveDueAt: Date | null;
  createdAt: Date;
  number: number;
}

interface OrderTerm {
  term: <C extends Column>(c: DispatchColumns<C>) => C | SQL;
  direction: "asc" | "desc";
  /** Only where the default (nulls last for asc) is not meant. */
  nulls?: "last";
  /** The term's value for an in-memory issue: the same order for code that predicts a pick. */
  value: (r: Ranked) => number;
}

/** Most urgent effective level first, review before other work, earliest effective deadline, oldest, lowest number. */
const ORDER: readonly OrderTerm[] = [
  { term: (c) => c.effectiveLevel, direction: "desc", value: (r) => r.effectiveLevel },
  { term: (c) => sql`(${c.status} = 'review')`, direction: "desc", value: (r) => (r.status === "review" ? 1 : 0) },
  { term: (c) => c.effectiveDueAt, direction: "asc", nulls: "last", value: (r) => r.effectiveDueAt?.getTime() ?? Infinity },
  { term: (c) => c.createdAt, direction: "asc", value: (r) => r.createdAt.getTime() },
  { term: (c) => c.number, direction: "asc", value: (r) => r.number },
];

const ordered = (t: OrderTerm, c: DispatchColumns) => sql`${t.term(c)} ${sql.raw(t.direction)}${sql.raw(t.nulls ? ` nulls ${t.nulls}` : "")}`;

/** The dispatch order as ORDER BY terms. */
export function dispatchOrder(c: DispatchColumns): SQL[] {
  return ORDER.map((t) => ordered(t, c));
}

/** The dispatch order as index columns: a plain ascending column is listed bare. */
export function dispatchIndexOrder<C extends Column>(c: DispatchColumns<C>): (C | SQL)[] {
  return ORDER.map((t) => {
    const term = t.term(c);
    return t.direction === "asc" && !t.nulls && !is(term, SQL) ? term : ordered(t, c);
  });
}

/** The dispatch order over issues in memory: negative when `a` goes first. */
export function compareDispatch(a: Ranked, b: Ranked): number {
  for (const t of ORDER) {
    const av = t.value(a);
    const bv = t.value(b);
    if (av !== bv) return t.direction === "asc" ? (av < bv ? -1 : 1) : av > bv ? -1 : 1;
  }
  return 0;
}

/**
 * The stored half of dispatchability (what the partial dispatch index holds): open work that
 * nothing open blocks and that is not an outsider's issue awaiting triage.
 */
export function dispatchCandidate(c: DispatchColumns): SQL {
  const statuses = sql.raw(`(${DISPATCH_STATUSES.map((s) => `'${s}'`).join(",")})`);
  return sql`${c.work} and ${c.status} in ${statuses} and ${c.openBlockerCount} = 0 and ${c.triage} is distinct from 'pending'`;
}

/** Dispatchable at `now`: a candidate whose lease, if any, is no longer live. */
export function dispatchable(c: DispatchColumns, now: SQL): SQL {
  return sql`${dispatchCandidate(c)} and (${c.leaseExpiresAt} is null or ${c.leaseExpiresAt} <= ${now})`;
}

/**
 * The two halves of `dispatchable`, each with an index of its own so a pick never walks held
 * work (decision 076): a candidate with no lease (the claimable indexes, in dispatch order)...
 */
export function unleased(c: DispatchColumns): SQL {
  return sql`${dispatchCandidate(c)} and ${c.leaseCheckAt} is null`;
}

/**
 * ...and a candidate whose lease has lapsed by `now` and is not swept yet (few: the held index, by
 * `lease_check_at`, then the exact expiry). The indexes name `lease_check_at`, never
 * `lease_expires_at`, so a renewal, which moves only the expiry, is a HOT update (decision 097):
 * `lease_check_at` is set and cleared with the lease and is never after its expiry (a trigger keeps
 * it, migration 0062), and a renewal moves it only once it is within half a lease of now.
 */
export function lapsed(c: DispatchColumns, now: SQL): SQL {
  return sql`${dispatchCandidate(c)} and ${c.leaseCheckAt} <= ${now} and ${c.leaseExpiresAt} <= ${now}`;
}

/** What the held index holds: candidates under a lease, live or lapsed. */
export function leased(c: DispatchColumns): SQL {
  return sql`${dispatchCandidate(c)} and ${c.leaseCheckAt} is not null`;
}

/** Nobody is handed work they submitted to review. `userId` is the caller's human, or null. */
function notOwnReview(c: DispatchColumns, userId: SQL): SQL {
  return sql`(${userId} is null or not (${c.status} = 'review' and ${c.submitterId} is not distinct from ${userId}))`;
}

/** The caller's lanes: their human's work and unassigned work, or every lane with `allLanes`. */
export function inLanes(c: DispatchColumns, userId: SQL, allLanes: SQL): SQL {
  return sql`${notOwnReview(c, userId)} and (${allLanes} or ${userId} is null or ${c.assigneeId} is null or ${c.assigneeId} = ${userId})`;
}

/** Work in other people's lanes only: what `allLanes` adds. */
export function othersLanes(c: DispatchColumns, userId: SQL): SQL {
  return sql`${userId} is not null and ${c.assigneeId} is not null and ${c.assigneeId} <> ${userId} and ${notOwnReview(c, userId)}`;
}
