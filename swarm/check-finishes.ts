import type { ActivityRow, Violation } from "./check-rows.ts";
import { iso, push } from "./check-rows.ts";
import { byCommit, writtenBefore, type RunData } from "./check-data.ts";

/**
 * The swarm checker's checks of finishing (swarm/checker.ts runs them): 1. every issue finished
 * exactly once per verification round, and 4. no issue claimed while a blocker still gated it.
 * See docs/reliability.md.
 */

export interface Finishing {
  /** Issues that ended done (poison issues aside). */
  finished: number;
  /** Failed verifications followed by a new claim of the issue. */
  redispatched: number;
  /**
   * What ended each issue's gating of its dependents, committed: its finish, or where the project
   * verifies finishes, its pass. A claim locks its row, which either of them updates (the
   * dependents' blocker counts), so commit order is exact, and within one transaction the order
   * of the rows (writtenBefore).
   */
  gateEnd: Map<string, ActivityRow>;
  /** When each issue was out of dispatch: [finish, failure) per failed round, [last finish, ∞); the checker adds [quarantine, ∞). */
  doneSpans: Map<string, [number, number][]>;
}

/**
 * 1. Every issue finished exactly once, by its last lease; where the project verifies finishes
 *    (decision 045), once per verification round: finish, red verdict (reopened), finish, ...,
 *    finish, green verdict, each failure followed by a new claim. Poison issues are checked in 10
 *    (swarm/check-claims.ts).
 */
export function checkFinishes(d: RunData, poison: Set<string>, violation: Violation): Finishing {
  const { issues, finishesOf, failuresOf, passesOf, leasesOf, claimsOf, verifies } = d;
  let finished = 0;
  const gateEnd = new Map<string, ActivityRow>();
  const doneSpans = new Map<string, [number, number][]>();
  let redispatched = 0;
  for (const issue of issues) {
    const finishes = finishesOf.get(issue.id) ?? [];
    const failures = failuresOf.get(issue.id) ?? [];
    const passes = passesOf.get(issue.id) ?? [];
    const list = leasesOf.get(issue.id) ?? [];
    const at = (a: ActivityRow) => a.committed_ms ?? a.created_ms;
    // The rounds in commit order: each finish closes the issue until a failure reopens it.
    const events = [...finishes.map((a) => ["finish", a] as const), ...failures.map((a) => ["fail", a] as const)].sort((x, y) => byCommit(x[1], y[1]));
    let openedAt: number | null = null;
    for (const [kind, a] of events) {
      if (kind === "finish") {
        if (openedAt !== null) violation("finished-twice", `${issue.identifier} finished again at ${iso(at(a))} with no failed verification since its finish at ${iso(openedAt)}`);
        openedAt ??= at(a);
      } else {
        if (openedAt === null) violation("verification", `${issue.identifier}: a failed verification at ${iso(at(a))} of no pending finish`);
        else push(doneSpans, issue.id, [openedAt, at(a)]);
        openedAt = null;
        // A red run reopens the work: it is dispatched again.
        if ((claimsOf.get(issue.id) ?? []).some((c) => at(c) > at(a))) redispatched++;
        else if (!poison.has(issue.identifier)) violation("redispatch", `${issue.identifier} failed verification at ${iso(at(a))} and was never claimed again`);
      }
    }
    if (openedAt !== null) push(doneSpans, issue.id, [openedAt, Infinity]);
    if (poison.has(issue.identifier)) continue;
    if (issue.quarantined_ms !== null) {
      violation("quarantined", `${issue.identifier} was quarantined (${issue.quarantine_reason}), and nothing made it fail`);
      continue;
    }
    if (issue.status === "done") finished++;
    else violation("unfinished", `${issue.identifier} is ${issue.status}, not done`);
    const rounds = verifies(issue) ? failures.length + 1 : 1;
    if (finishes.length !== rounds) {
      // Fewer finishes than rounds: done on a red verdict, never finished again.
      violation(
        finishes.length === 0 ? "unfinished" : finishes.length > rounds ? "finished-twice" : "unverified",
        `${issue.identifier} finished ${finishes.length} times` + (failures.length > 0 ? ` with ${failures.length} failed verifications` : ""),
      );
    }
    if (!verifies(issue) && (failures.length > 0 || passes.length > 0)) violation("verification", `${issue.identifier}: verified in a project that does not verify finishes`);
    if (verifies(issue) && issue.status === "done") {
      const last = finishes.at(-1);
      if (issue.verification !== "passed" || passes.length !== 1 || !last || at(passes[0]!) < at(last)) {
        violation("unverified", `${issue.identifier} ended done with verification ${issue.verification} (${passes.length} passes recorded)`);
      }
    }
    const finishedLeases = list.filter((l) => l.end_reason === "finished");
    if (issue.status === "done" && (finishedLeases.length !== finishes.length || finishedLeases.at(-1) !== list.at(-1))) {
      violation("finished-twice", `${issue.identifier}: ${finishedLeases.length} leases ended by finishing; expected ${finishes.length}, the last one last`);
    }
    const end = verifies(issue) ? passes[0] : finishes[0];
    if (end?.committed_ms != null) gateEnd.set(issue.id, end);
  }
  return { finished, redispatched, gateEnd, doneSpans };
}

/**
 * 4. No blocked issue was ever dispatched: each claim committed after every blocker was let go,
 *    its finish, or where the project verifies finishes, its pass: never while a blocker was
 *    open, done with verification pending, or reopened by a failed verification.
 */
export function checkBlockedDispatch(d: RunData, gateEnd: Map<string, ActivityRow>, violation: Violation): { gatedClaims: number; claimsOnUnverifiedBlocker: number } {
  const { activity, blockersOf, finishesOf, failuresOf, byId, verifies } = d;
  let gatedClaims = 0;
  let claimsOnUnverifiedBlocker = 0;
  for (const a of activity) {
    if (a.kind !== "claimed" || a.committed_ms === null) continue;
    const blockers = blockersOf.get(a.issue_id) ?? [];
    if (blockers.length > 0) gatedClaims++;
    let held = false;
    for (const blocker of blockers) {
      const letGo = gateEnd.get(blocker);
      if (letGo !== undefined && writtenBefore(letGo, a)) continue;
      held = true;
      const before = (b: ActivityRow) => writtenBefore(b, a);
      const lastFinish = (finishesOf.get(blocker) ?? []).filter(before).at(-1);
      const lastFailure = (failuresOf.get(blocker) ?? []).filter(before).at(-1);
      const state = !lastFinish
        ? "open"
        : lastFailure && byCommit(lastFailure, lastFinish) > 0
          ? "reopened by a failed verification"
          : byId.get(blocker) && verifies(byId.get(blocker)!)
            ? "done, verification pending"
            : "open";
      violation("blocked-dispatch", `${byId.get(a.issue_id)?.identifier} fence ${a.fence} was claimed while its blocker ${byId.get(blocker)?.identifier} was ${state}`);
    }
    if (held) claimsOnUnverifiedBlocker++;
  }
  return { gatedClaims, claimsOnUnverifiedBlocker };
}
