/**
 * Dispatch and claims, one file per operation: next.ts (next_issue), batch.ts (next_batch),
 * claim.ts (claim_issue and the lease every claim takes), lease.ts (check, heartbeat,
 * checkpoint, release), status.ts (queue_status); dispatch.ts reads the dispatch rule for the
 * caller's scope and lanes.
 */
export { nextBatch } from "./batch.ts";
export { claimIssue, type ClaimReply } from "./claim.ts";
export { applyDueSla } from "./dispatch.ts";
export { checkClaim, checkpoint, heartbeat, releaseIssue } from "./lease.ts";
export { nextIssue } from "./next.ts";
export { reclaimSweep } from "./reclaim.ts";
export { slaSweep } from "./sla.ts";
export { queueForecast, type QueueForecast } from "./forecast.ts";
export { queueStatus } from "./status.ts";
