import type { Violation } from "./check-rows.ts";
import { iso } from "./check-rows.ts";
import { leaseKey, type RunData } from "./check-data.ts";

/**
 * The swarm checker's checks of leases (swarm/checker.ts runs them): 2. leases of one issue never
 * overlap, and fences rise by one per claim; 3. every write accepted under a lease happened while
 * that lease was live. See docs/reliability.md.
 */
export function checkLeases(d: RunData, ttlMs: number, violation: Violation): void {
  const { leasesOf, byId, claimOf, endOf, callsOf, underLease } = d;
  for (const [issueId, list] of leasesOf) {
    const identifier = byId.get(issueId)?.identifier ?? issueId;
    list.forEach((lease, index) => {
      if (lease.fence !== index + 1) violation("fences", `${identifier}: lease fences are ${list.map((l) => l.fence).join(",")}, not 1..n`);
      const claim = claimOf(issueId, lease.fence);
      if (!claim) {
        violation("fences", `${identifier} fence ${lease.fence}: no claimed entry in the activity log`);
        return;
      }
      const next = list[index + 1];
      if (next) {
        const nextClaim = claimOf(issueId, next.fence);
        if (lease.end_reason === null) violation("overlap", `${identifier} fence ${lease.fence} still open when fence ${next.fence} was granted`);
        // Released or finished leases end when that write commits; expired ones at their last expiry.
        const end = lease.end_reason === "expired" ? lease.expires_ms : (lease.ended_ms ?? Infinity);
        if (next.claimed_ms < end) {
          violation("overlap", `${identifier}: fence ${next.fence} claimed at ${iso(next.claimed_ms)} while fence ${lease.fence} held it until ${iso(end)} (${lease.end_reason})`);
        }
        const ended = endOf(issueId, lease.fence);
        if (ended?.committed_ms != null && nextClaim?.committed_ms != null && ended.committed_ms >= nextClaim.committed_ms) {
          violation("overlap", `${identifier}: fence ${next.fence} committed before fence ${lease.fence}'s ${ended.kind} did`);
        }
      }
      // Replay the lease: each accepted write must arrive before the expiry in force at that moment.
      // A heartbeat or checkpoint renews it at a known moment (its activity row; a run of beats is
      // one row with its first and last beat's times, decision 105); a call of the
      // holding session may renew it too (decision 036), leaving no row: only that it happened
      // within one of the session's calls, so each such call extends the latest possible expiry
      // to its answer + TTL, if it began while the lease could still be live.
      let expiry = claim.created_ms + ttlMs;
      let latest = expiry;
      const calls = (lease.session_id ? (callsOf.get(lease.session_id) ?? []) : []).filter(([, end]) => end >= claim.created_ms);
      let call = 0;
      const renewUpTo = (at: number) => {
        for (; call < calls.length && calls[call]![0] < at; call++) {
          if (calls[call]![0] < latest) latest = Math.max(latest, calls[call]![1] + ttlMs);
        }
      };
      const writes = (underLease.get(leaseKey(issueId, lease.fence)) ?? [])
        .filter((a) => a.kind !== "claimed")
        .sort((a, b) => a.created_ms - b.created_ms || a.id - b.id);
      const nextClaim = next ? claimOf(issueId, next.fence) : undefined;
      let renewedAt = claim.created_ms;
      for (const w of writes) {
        renewUpTo(w.created_ms);
        if (w.created_ms >= latest) {
          violation("write-after-expiry", `${identifier} fence ${lease.fence}: ${w.kind} accepted at ${iso(w.created_ms)}, after the lease expired at ${iso(latest)}`);
        }
        if (nextClaim?.committed_ms != null && w.committed_ms != null && w.committed_ms > nextClaim.committed_ms) {
          violation("write-after-supersede", `${identifier} fence ${lease.fence}: ${w.kind} committed after fence ${next!.fence} was claimed`);
        }
        if (w.kind === "heartbeat" || w.kind === "checkpoint") {
          expiry = w.created_ms + ttlMs;
          latest = Math.max(latest, expiry);
          renewedAt = w.created_ms;
        }
        if (w.kind === "heartbeat" && w.beats > 1) {
          // The run's last beat renewed it again. Its middle beats left no time, so only a run of
          // two has a last beat whose expiry in force is known.
          renewUpTo(w.last_ms);
          if (w.beats === 2 && w.last_ms >= latest) {
            violation("write-after-expiry", `${identifier} fence ${lease.fence}: heartbeat accepted at ${iso(w.last_ms)}, after the lease expired at ${iso(latest)}`);
          }
          expiry = w.last_ms + ttlMs;
          latest = Math.max(latest, expiry);
          renewedAt = w.last_ms;
        }
      }
      if (lease.renewed_by === "calls") {
        // Its last renewal was by its session's calls: at a moment one of them was under way, after its last heartbeat.
        renewUpTo(lease.renewed_ms);
        const during = calls.some(([start, end]) => start - 1 <= lease.renewed_ms && lease.renewed_ms <= end + 1);
        if (!during || lease.renewed_ms < renewedAt || lease.renewed_ms >= latest || Math.abs(lease.renewed_ms + ttlMs - lease.expires_ms) > 1) {
          violation(
            "lease-expiry",
            `${identifier} fence ${lease.fence}: renewed by its session's calls at ${iso(lease.renewed_ms)} to ${iso(lease.expires_ms)}, ` +
              (during ? `which its renewals do not allow (last heartbeat ${iso(renewedAt)}, latest expiry ${iso(latest)})` : "when that session had no call under way"),
          );
        }
      } else if (Math.abs(expiry - lease.expires_ms) > 1) {
        violation("lease-expiry", `${identifier} fence ${lease.fence}: lease expiry ${iso(lease.expires_ms)} is not what its renewals give (${iso(expiry)})`);
      }
    });
  }
}
