import type { Violation } from "./check-rows.ts";
import { iso } from "./check-rows.ts";
import { leaseKey, type RunData } from "./check-data.ts";
import type { CheckpointNotes, ClaimRecord } from "./records.ts";

/**
 * The swarm checker's checks of claims (swarm/checker.ts runs them): 7. each claim was handed the
 * last checkpoint, and 10. poison issues were quarantined as decision 055 says. See docs/reliability.md.
 */

/** 7. Every claim after an earlier lease was handed the last checkpoint committed before it. */
export function checkResumedClaims(
  d: RunData,
  claimRecords: ClaimRecord[],
  violation: Violation,
): { resumedChecked: number; resumedAfterExpiry: number; reopenedWithGotchas: number } {
  const { byIdentifier, claimOf, checkpointsOf, leasesOf, failuresOf, claimsOf } = d;
  let resumedChecked = 0;
  let resumedAfterExpiry = 0;
  let reopenedWithGotchas = 0;
  for (const record of claimRecords) {
    if (record.fence <= 1) continue;
    const issue = byIdentifier.get(record.identifier);
    const claim = issue && claimOf(issue.id, record.fence);
    if (!issue || !claim || claim.committed_ms === null) {
      violation("phantom-claim", `${record.agent} recorded a claim of ${record.identifier} fence ${record.fence} the database does not have`);
      continue;
    }
    const before = (checkpointsOf.get(issue.id) ?? []).filter((c) => c.committed_ms !== null && c.committed_ms < claim.committed_ms!);
    const expected = before.at(-1)?.notes ?? null;
    resumedChecked++;
    const previous = leasesOf.get(issue.id)?.find((l) => l.fence === record.fence - 1);
    if (previous?.end_reason === "expired") resumedAfterExpiry++;
    // The first claim after a failed verification: its checkpoint carries the failing checks.
    const failure = (failuresOf.get(issue.id) ?? []).filter((f) => (f.committed_ms ?? f.created_ms) < claim.committed_ms!).at(-1);
    const firstAfter = failure && !(claimsOf.get(issue.id) ?? []).some((c) => c !== claim && (c.committed_ms ?? 0) > (failure.committed_ms ?? 0) && (c.committed_ms ?? 0) < claim.committed_ms!);
    if (firstAfter && record.checkpoint?.gotchas?.startsWith("CI failed")) reopenedWithGotchas++;
    else if (firstAfter) violation("gotchas", `${record.identifier} fence ${record.fence}, the first claim after its failed verification, was handed gotchas ${JSON.stringify(record.checkpoint?.gotchas ?? null)}`);
    // Notes as the agents record them: gotchas only where the reply carried them.
    const notes = (n: CheckpointNotes | null) => n && { done: n.done, next: n.next, note: n.note, gotchas: n.gotchas ?? null };
    if (JSON.stringify(notes(expected)) !== JSON.stringify(notes(record.checkpoint))) {
      violation(
        "checkpoint",
        `${record.identifier} fence ${record.fence}: the claim carried checkpoint ${JSON.stringify(record.checkpoint)}, ` +
          `the last one written before it was ${JSON.stringify(expected)}`,
      );
    }
  }
  return { resumedChecked, resumedAfterExpiry, reopenedWithGotchas };
}

/**
 * 10. Poison issues: quarantined after exactly their project's quarantine_after claims, each
 *     abandoned (lapsed or released, no checkpoint under it), and never claimed after.
 */
export function checkPoison(d: RunData, poison: Set<string>, violation: Violation): { quarantined: number; poisonClaims: number; claimedAfter: number } {
  const { byIdentifier, projectOf, leasesOf, claimsOf, underLease, quarantinesOf } = d;
  let quarantined = 0;
  let poisonClaims = 0;
  let claimedAfter = 0;
  for (const identifier of poison) {
    const issue = byIdentifier.get(identifier);
    if (!issue) {
      violation("quarantine", `poison issue ${identifier} does not exist`);
      continue;
    }
    const k = projectOf.get(issue.project_id)?.quarantine_after ?? 3;
    const list = leasesOf.get(issue.id) ?? [];
    const claims = claimsOf.get(issue.id) ?? [];
    poisonClaims += claims.length;
    if (issue.status !== "blocked" || issue.quarantined_ms === null) {
      violation("quarantine", `poison issue ${identifier} is ${issue.status}${issue.quarantined_ms === null ? ", not quarantined" : ""} after ${list.length} claims`);
      continue;
    }
    quarantined++;
    if (list.length !== k || issue.quarantine_reason !== `quarantined after ${k} abandoned claims`) {
      violation("quarantine", `${identifier} was quarantined after ${list.length} claims (${issue.quarantine_reason}), not ${k}`);
    }
    for (const lease of list) {
      const progress = (underLease.get(leaseKey(issue.id, lease.fence)) ?? []).filter((a) => a.kind === "checkpoint" || a.kind === "finished");
      if ((lease.end_reason !== "expired" && lease.end_reason !== "released") || progress.length > 0) {
        violation("quarantine", `${identifier} fence ${lease.fence} was not abandoned (${lease.end_reason}, ${progress.length} checkpoints or finishes under it)`);
      }
    }
    const at = (quarantinesOf.get(issue.id) ?? [])[0]?.committed_ms ?? issue.quarantined_ms;
    const after = claims.filter((c) => (c.committed_ms ?? c.created_ms) > at);
    claimedAfter += after.length;
    if (after.length > 0) violation("quarantine", `${identifier} was claimed ${after.length} times after its quarantine at ${iso(at)}`);
  }
  return { quarantined, poisonClaims, claimedAfter };
}
