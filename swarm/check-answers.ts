import type { Violation } from "./check-rows.ts";
import type { RunData } from "./check-data.ts";
import type { AgentRecord, ProbeRecord, WriteRecord } from "./records.ts";

/**
 * The swarm checker's checks of what the agents were answered (swarm/checker.ts runs them):
 * 6. stale writes refused, 8. every answer true to its lease, 9. a sibling session of the same
 * key never taken for the holder. See docs/reliability.md.
 */

export interface Answers {
  staleWritesRefused: number;
  staleWritesAccepted: number;
  supersededAccepted: number;
  alreadyFinishedReplies: number;
  /** Leases told their finish went through (an accepted finish, not a retry told alreadyFinished), over every issue. */
  toldFinished: number;
  siblingProbes: number;
  siblingMismatches: number;
  siblingProbesAccepted: number;
  /** Refusals the agents were answered (writes and sibling probes), by error code. */
  refusals: Record<string, number>;
}

export function checkAnswers(d: RunData, records: AgentRecord[], violation: Violation): Answers {
  const { byIdentifier, leasesOf, leaseOf, liveFrom, liveUntil, finishedFences } = d;

  // 6. Stale writes: every write an agent sent after its lease's known expiry was refused:
  //    STALE_CLAIM, or CLAIM_MISMATCH while another session of the same key held the issue.
  const writes = records.filter((r): r is WriteRecord => r.t === "write");
  let staleRefused = 0;
  let staleAccepted = 0;
  for (const w of writes) {
    if (!w.stale) continue;
    if (w.outcome === "STALE_CLAIM") staleRefused++;
    else if (w.outcome === "ok") {
      staleAccepted++;
      violation("stale-accepted", `${w.agent}: a stale ${w.kind} of ${w.identifier} fence ${w.fence}, sent after its lease expired, was accepted`);
    } else if (w.outcome === "CLAIM_MISMATCH" && heldBySibling(w)) staleRefused++;
    else if (w.outcome !== "transport") {
      violation("stale-wrong-code", `${w.agent}: a stale ${w.kind} of ${w.identifier} was refused with ${w.outcome}, not STALE_CLAIM`);
    }
  }
  /** Another session of the writer's key held the issue at some moment of the write. */
  function heldBySibling(w: WriteRecord): boolean {
    const own = leaseOf(w.identifier, w.fence);
    const issue = byIdentifier.get(w.identifier);
    return (issue ? (leasesOf.get(issue.id) ?? []) : []).some(
      (l) => l.fence > w.fence && l.key_id === own?.key_id && l.session_id !== w.session && liveFrom(l) <= w.receivedAt && liveUntil(l) >= w.sentAt,
    );
  }
  // Writes the agents could not record (they were killed) are covered by the lease replay in 3 (check-leases.ts).

  // 8. Every answer true to its lease: no write accepted under a lease that had already ended or
  //    been superseded when it was sent; "you finished it" (an accepted finish, or alreadyFinished)
  //    only ever to the lease that finished the issue; so no issue is reported finished to two agents.
  let supersededAccepted = 0;
  let alreadyFinishedReplies = 0;
  const finishedFor = new Map<string, Set<number>>();
  for (const w of writes) {
    const finishers = finishedFences(w.identifier);
    if (w.alreadyFinished) alreadyFinishedReplies++;
    const toldFinished = w.alreadyFinished || (w.kind === "finish" && w.outcome === "ok");
    if (toldFinished && !finishers.has(w.fence)) {
      violation("told-finished", `${w.agent}: its ${w.kind} of ${w.identifier} under fence ${w.fence} was told it finished the issue, which fence ${[...finishers].join(", ") || "none"} finished`);
    }
    if (w.kind === "finish" && w.outcome === "ok" && !w.alreadyFinished) {
      const fences = finishedFor.get(w.identifier) ?? new Set<number>();
      finishedFor.set(w.identifier, fences.add(w.fence));
      // One finish per verification round: more fences told than finished it is a second finish.
      if (fences.size === Math.max(1, finishers.size) + 1) violation("finished-twice", `${w.identifier} was reported finished to fences ${[...fences].join(" and ")}`);
    }
    if (w.outcome !== "ok") continue;
    const own = leaseOf(w.identifier, w.fence);
    const later = own && leasesOf.get(own.issue_id)?.find((l) => l.fence === own.fence + 1);
    const ended = own && own.end_reason !== "expired" && own.end_reason !== null ? liveUntil(own) : Infinity;
    const superseded = Math.min(later ? liveFrom(later) : Infinity, w.alreadyFinished && finishers.has(w.fence) ? Infinity : ended);
    if (w.sentAt > superseded) {
      supersededAccepted++;
      violation("superseded-accepted", `${w.agent}: a ${w.kind} of ${w.identifier} under fence ${w.fence} was accepted, sent ${Math.round(w.sentAt - superseded)} ms after that lease ended or was superseded`);
    }
  }

  // 9. A sibling session of the same key is never taken for the holder: its tokenless write to the
  //    issue is refused, CLAIM_MISMATCH whenever the holder's lease was live throughout.
  const probes = records.filter((r): r is ProbeRecord => r.t === "probe" && r.outcome !== "transport");
  const sessionsOf = new Map<string, Set<string>>();
  for (const r of records) if (r.t === "session") sessionsOf.set(r.agent, (sessionsOf.get(r.agent) ?? new Set()).add(r.session));
  let siblingMismatches = 0;
  let siblingProbesAccepted = 0;
  for (const p of probes) {
    if (p.alreadyFinished) violation("told-finished", `${p.agent}: its tokenless ${p.kind} of ${p.identifier} was told it finished the issue`);
    const issue = byIdentifier.get(p.identifier);
    const holderSessions = sessionsOf.get(p.holder) ?? new Set();
    const live = (issue ? (leasesOf.get(issue.id) ?? []) : []).find(
      (l) => l.session_id !== null && holderSessions.has(l.session_id) && l.session_id !== p.session && liveFrom(l) <= p.sentAt && liveUntil(l) >= p.receivedAt,
    );
    // A tokenless done that reached the issue after its holder finished it changes nothing (an
    // edit of a done issue to done); one that changed it shows in check 1 as a second finish.
    if (p.outcome === "ok" && (live || p.kind !== "finish")) {
      siblingProbesAccepted++;
      violation("sibling-accepted", `${p.agent}: its tokenless ${p.kind} of ${p.identifier}, which ${p.holder} held, was accepted`);
      continue;
    }
    if (!live) continue;
    if (p.outcome === "CLAIM_MISMATCH") siblingMismatches++;
    else violation("sibling-wrong-code", `${p.agent}: its tokenless ${p.kind} of ${p.identifier}, held live by ${p.holder} in another session of its key, was refused ${p.outcome}, not CLAIM_MISMATCH`);
  }
  const refusals: Record<string, number> = {};
  for (const r of [...writes, ...probes]) if (r.outcome !== "ok" && r.outcome !== "transport") refusals[r.outcome] = (refusals[r.outcome] ?? 0) + 1;

  return {
    staleWritesRefused: staleRefused,
    staleWritesAccepted: staleAccepted,
    supersededAccepted,
    alreadyFinishedReplies,
    toldFinished: [...finishedFor.values()].reduce((n, fences) => n + fences.size, 0),
    siblingProbes: probes.length,
    siblingMismatches,
    siblingProbesAccepted,
    refusals,
  };
}
