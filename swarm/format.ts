import type { SwarmResult } from "./options.ts";

/** The report of a swarm run, as swarm/main.ts and the swarm test print it. */
export function formatSwarm(result: SwarmResult): string {
  const f = result.check.figures;
  const lines = [
    `issues finished     ${f.finished}/${f.issues - f.quarantine.poison} in ${result.seconds.toFixed(1)} s (${result.issuesPerSecond.toFixed(1)} issues/s)`,
    `agents              ${result.agents.solo} solo (a key each), ${result.agents.shared} on one shared key, ${result.agents.subagent} subagents of ${result.agents.orchestrator} orchestrators (next_batch)`,
    `claims              ${f.claims} (reclaims after expiry ${f.reclaims}, releases ${f.releases}, by next_batch ${f.batchClaims})`,
    `refusals            ${Object.entries(f.refusals).map(([code, n]) => `${code} ${n}`).join(", ") || "none"}`,
    `siblings            ${f.siblingProbes} tokenless writes to a sibling session's lease: ${f.siblingMismatches} refused CLAIM_MISMATCH while it was live, ${f.siblingProbesAccepted} accepted`,
    `finishes            ${f.toldFinished} agents told they finished (${f.alreadyFinishedReplies} retries told alreadyFinished); superseded writes accepted ${f.supersededAccepted}`,
    `stale writes        ${f.staleWritesRefused} refused, ${f.staleWritesAccepted} accepted`,
    `dispatches checked  ${f.dispatchesChecked} against the order (near misses inside the in-flight window: ${f.orderNearMisses})`,
    `resumed claims      ${f.resumedClaimsChecked} carried the last checkpoint check (${f.resumedAfterExpiry} after an expiry)`,
    `faults              ${result.faults.agentKills} agent processes SIGKILLed, ${result.faults.appKills} app instance kills, ${result.faults.postgresRestarts} PostgreSQL restarts, ${result.faults.redisRestarts} Redis restarts`,
    `agent retries       ${f.agentRetries} (transport errors, 5xx, UNAVAILABLE); claims with no agent record (killed): ${f.claimsWithoutAgentRecord}`,
    `  by cause          ${Object.entries(result.transport.byCode).map(([code, n]) => `${code} ${n.failures} (${n.expected} in a fault)`).join(", ") || "none"}; unexpected ${result.transport.unexpected.length}`,
    ...result.transport.unexpected.slice(0, 20).map((u) => `  ? ${u}`),
    ...(result.ci
      ? [
          `verification        ${f.verification.finishes} finishes with evidence, attested by the fake CI over POST /api/ci/verify: ${result.ci.failed} red (${Object.keys(result.ci.failuresByIssue).length} issues reopened, ${f.verification.redispatched} failures dispatched again, ${f.verification.reopenedWithGotchas} next claims handed the failing check as gotchas), ${result.ci.passed} green; ${result.ci.resent} attestations resent; finish to verdict median ${median(result.ci.finishToVerdictMs)} ms`,
          `  gating            ${f.verification.gatedClaims} claims of issues with blockers, each committed after every blocker's pass; on a pending or failed blocker: ${f.verification.claimsOnUnverifiedBlocker}; ${f.verification.passed} of ${f.issues - f.quarantine.poison} issues done and passed`,
        ]
      : []),
    ...(result.poison
      ? [
          `quarantine          ${f.quarantine.quarantined} of ${f.quarantine.poison} poison issues quarantined after exactly ${result.poison.quarantineAfter} abandoned claims (${f.quarantine.claims} claims, ${f.quarantine.died} agents died on them); claimed after quarantine: ${f.quarantine.claimedAfter}`,
        ]
      : []),
    `violations          ${Object.entries(result.check.violationCounts).map(([kind, n]) => `${kind} ${n}`).join(", ") || "none"}`,
    ...result.check.violations.slice(0, 50).map((v) => `  ✗ ${v}`),
    `metrics             ${result.metrics.scrapes} scrapes (${result.metrics.failedScrapes} failed, during restarts); without the token: ${result.metrics.withoutToken}; an unsigned webhook delivery: ${result.metrics.webhookProbes.join(", ")}`,
    `  moved             ${result.metrics.moved.join(", ")}`,
    `  never moved       ${result.metrics.still.join(", ") || "none"}`,
    `seed                ${result.seed}`,
  ];
  return lines.join("\n");
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)]!);
}
