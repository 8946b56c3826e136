import type { Db } from "../db/client.ts";
import type { Keyring } from "../server/crypto/index.ts";
import { push, type ActivityRow } from "./check-rows.ts";
import { readRun } from "./check-data.ts";
import { checkAnswers } from "./check-answers.ts";
import { checkPoison, checkResumedClaims } from "./check-claims.ts";
import { checkBlockedDispatch, checkFinishes } from "./check-finishes.ts";
import { checkLeases } from "./check-leases.ts";
import { checkDispatchOrder, rankKeys } from "./dispatch-order.ts";
import type { AgentRecord, ClaimRecord } from "./records.ts";

/**
 * The swarm's invariant checker. It reads the database after the run (issues, relations,
 * leases, the activity log and checkpoints, ordered by PostgreSQL commit timestamps, which
 * the swarm's private cluster records: swarm/check-data.ts) beside what the agents wrote down,
 * and reports every violation of the dispatch contract it can establish, one file a concern:
 * finishes and blockers (1, 4: check-finishes.ts), leases (2, 3: check-leases.ts), dispatch
 * order (5: dispatch-order.ts), answers (6, 8, 9: check-answers.ts), claims (7, 10:
 * check-claims.ts). See docs/reliability.md for what each check proves and where it has to give way.
 */

export interface CheckInput {
  db: Db;
  keyring: Keyring;
  orgId: string;
  ttlMs: number;
  records: AgentRecord[];
  /**
   * The priority each issue was seeded with, by identifier. A failed verification floors an
   * issue's priority at High (decision 045), so its stored priority is its rank only from that
   * failure on. Without it, the stored priorities (right for a run with no failed verification).
   */
  seededPriority?: Map<string, number>;
  /**
   * Poison issues (identifiers): each must end quarantined after exactly its project's
   * quarantine_after abandoned claims and never be claimed after (decision 055). Every other
   * issue must end done (and, in a project that verifies finishes, passed).
   */
  poison?: string[];
  /**
   * How long a claim transaction may plausibly have been in flight around its commit. A
   * competitor ahead in the order only counts against a dispatch if it was free and unlocked
   * for this long on both sides of the dispatch's commit (see checkDispatchOrder).
   */
  inFlightMs?: number;
}

export interface CheckResult {
  /** Examples, up to 20 per kind, each prefixed with its kind. */
  violations: string[];
  violationCounts: Record<string, number>;
  figures: {
    issues: number;
    finished: number;
    claims: number;
    reclaims: number;
    releases: number;
    staleWritesRefused: number;
    staleWritesAccepted: number;
    dispatchesChecked: number;
    /** Competitors ahead that were free within the in-flight window only: allowed, but counted. */
    orderNearMisses: number;
    resumedClaimsChecked: number;
    resumedAfterExpiry: number;
    claimsWithoutAgentRecord: number;
    agentRetries: number;
    /** Claims an orchestrator's next_batch took for its subagents. */
    batchClaims: number;
    /** Refusals the agents were answered (writes and sibling probes), by error code. */
    refusals: Record<string, number>;
    /** Tokenless writes to a sibling session's lease on the same key, answered. */
    siblingProbes: number;
    /** ...of which the lease was live throughout and the answer CLAIM_MISMATCH. */
    siblingMismatches: number;
    siblingProbesAccepted: number;
    /** Agents told their finish went through (one per issue, unless one was killed before it could log it). */
    toldFinished: number;
    /** Finishes retried and told alreadyFinished (only ever the finishing lease). */
    alreadyFinishedReplies: number;
    supersededAccepted: number;
    /** Projects that verify finishes in CI (decision 045). */
    verification: {
      /** Finishes left pending, failed and passed. */
      finishes: number;
      failed: number;
      passed: number;
      /** Failures followed by a new claim of the issue. */
      redispatched: number;
      /** The first claims after a failure whose reply carried the failing checks as gotchas. */
      reopenedWithGotchas: number;
      /** Claims of issues with blockers (each checked to commit after every blocker was let go). */
      gatedClaims: number;
      /** ...committed while a blocker was open, pending or failed: the violations. */
      claimsOnUnverifiedBlocker: number;
    };
    quarantine: {
      poison: number;
      quarantined: number;
      /** Claims of poison issues, and agents that recorded they died on one. */
      claims: number;
      died: number;
      claimedAfter: number;
    };
  };
}

export async function checkInvariants(input: CheckInput): Promise<CheckResult> {
  const { ttlMs } = input;
  const inFlight = input.inFlightMs ?? 250;
  const violations: string[] = [];
  const violationCounts: Record<string, number> = {};
  // Examples are kept per kind, so a flood of one kind never hides another.
  const violation = (kind: string, message: string) => {
    violationCounts[kind] = (violationCounts[kind] ?? 0) + 1;
    if (violationCounts[kind] <= 20) violations.push(`[${kind}] ${message}`);
  };
  const data = await readRun(input, violation);
  const { issues, leases, activity, leasesOf, failuresOf, passesOf, quarantinesOf } = data;
  const poison = new Set(input.poison ?? []);

  const { finished, redispatched, gateEnd, doneSpans } = checkFinishes(data, poison, violation);
  checkLeases(data, ttlMs, violation);
  const { gatedClaims, claimsOnUnverifiedBlocker } = checkBlockedDispatch(data, gateEnd, violation);

  // 5. Every dispatch was the top of the order in the claimant's lanes at its moment.
  const claimRecords = input.records.filter((r): r is ClaimRecord => r.t === "claim");
  const recordOf = new Map(claimRecords.map((r) => [`${r.identifier}#${r.fence}`, r]));
  const keyAt = rankKeys(issues, data.blocksOf, input.seededPriority, failuresOf);
  // A quarantined issue leaves dispatch when the lapse that quarantines it is due: any claim from
  // then on records it and takes nothing (decision 055).
  for (const issue of issues) {
    if (issue.quarantined_ms === null) continue;
    const quarantined = quarantinesOf.get(issue.id)?.[0];
    const last = leasesOf.get(issue.id)?.at(-1);
    const from = Math.min(quarantined?.committed_ms ?? issue.quarantined_ms, last?.end_reason === "expired" ? last.expires_ms : Infinity);
    push(doneSpans, issue.id, [from, Infinity]);
  }
  const { checked, nearMisses } = checkDispatchOrder({
    issues,
    keyAt,
    activity,
    leasesOf,
    blockersOf: data.blockersOf,
    gateEnd,
    doneSpans,
    claimOf: data.claimOf,
    endOf: data.endOf,
    records: input.records,
    recordOf,
    inFlight,
    violation,
  });

  const answers = checkAnswers(data, input.records, violation);
  const { resumedChecked, resumedAfterExpiry, reopenedWithGotchas } = checkResumedClaims(data, claimRecords, violation);
  const { quarantined, poisonClaims, claimedAfter } = checkPoison(data, poison, violation);

  const claimsTotal = activity.filter((a) => a.kind === "claimed").length;
  const count = (map: Map<string, ActivityRow[]>) => [...map.values()].reduce((n, list) => n + list.length, 0);
  return {
    violations,
    violationCounts,
    figures: {
      issues: issues.length,
      finished,
      claims: claimsTotal,
      reclaims: leases.filter((l) => l.end_reason === "expired").length,
      releases: leases.filter((l) => l.end_reason === "released").length,
      staleWritesRefused: answers.staleWritesRefused,
      staleWritesAccepted: answers.staleWritesAccepted,
      dispatchesChecked: checked,
      orderNearMisses: nearMisses,
      resumedClaimsChecked: resumedChecked,
      resumedAfterExpiry,
      claimsWithoutAgentRecord: claimsTotal - recordOf.size,
      agentRetries: input.records.filter((r) => r.t === "retry").length,
      batchClaims: claimRecords.filter((r) => r.batch).length,
      refusals: answers.refusals,
      siblingProbes: answers.siblingProbes,
      siblingMismatches: answers.siblingMismatches,
      siblingProbesAccepted: answers.siblingProbesAccepted,
      toldFinished: answers.toldFinished,
      alreadyFinishedReplies: answers.alreadyFinishedReplies,
      supersededAccepted: answers.supersededAccepted,
      verification: {
        finishes: activity.filter((a) => a.kind === "finished" && a.verification === "pending").length,
        failed: count(failuresOf),
        passed: count(passesOf),
        redispatched,
        reopenedWithGotchas,
        gatedClaims,
        claimsOnUnverifiedBlocker,
      },
      quarantine: {
        poison: poison.size,
        quarantined,
        claims: poisonClaims,
        died: input.records.filter((r) => r.t === "died").length,
        claimedAfter,
      },
    },
  };
}
