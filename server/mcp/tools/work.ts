import { z } from "zod";
import { issueStatuses } from "../../../shared/statuses.ts";
import { checkClaim, checkpoint, claimIssue, heartbeat, nextBatch, nextIssue, releaseIssue } from "../../queue/index.ts";
import {
  checkClaimInput,
  checkpointInput,
  claimIssueInput,
  heartbeatInput,
  nextBatchInput,
  nextIssueInput,
  releaseIssueInput,
} from "../../queue/schemas.ts";
import { checkpointOutput, claimOutput, holderOutput, issueSummaryOutput, nothingClaimableOutput } from "../outputs.ts";
import { additiveWrite, defineTool, destructiveWrite, idempotentWrite, readOnly } from "../tool.ts";

export const workTools = [
  defineTool({
    name: "next_issue",
    title: "Claim the next issue",
    group: "work loop",
    description:
      "Claims the single most urgent unblocked work issue in your lanes (assigned to your human, or unassigned; " +
      "review work you did not submit counts too) and returns it with a claimToken, the branch to work on, the " +
      "latest checkpoint to resume from, and your count of other live claims. The claim is a lease: renew it with " +
      "heartbeat or checkpoint. When nothing is claimable the reply has no claimToken and says how many ready " +
      "issues sit in other people's lanes (otherLanes); pass allLanes:true to take those too.",
    input: nextIssueInput,
    output: z.union([claimOutput, nothingClaimableOutput]),
    annotations: additiveWrite,
    access: "write",
    meter: {
      tier: "dispatch",
      charge: (_input, output) => ("claimToken" in output ? { tier: "dispatch", units: 1 } : null),
    },
    handler: (ctx, input) => nextIssue(ctx, input),
  }),
  defineTool({
    name: "next_batch",
    title: "Plan or claim a batch",
    group: "work loop",
    description:
      "Up to n (default 5, max 25) dispatchable issues in dispatch order that are mutually independent (no " +
      "dependency path, parent/child, related or duplicate link between any two), so an orchestrator can fan them " +
      "out to parallel agents. claim:false (default) is a free peek that holds nothing; claim:true claims them all " +
      "in one transaction and returns a claim (with its claimToken) for each. Lanes work as in next_issue.",
    input: nextBatchInput,
    output: z.union([
      z.object({ claimed: z.literal(true), claims: z.array(claimOutput) }),
      z.object({ claimed: z.literal(false), issues: z.array(issueSummaryOutput) }),
      nothingClaimableOutput.extend({ claims: z.array(claimOutput).optional(), issues: z.array(issueSummaryOutput).optional() }),
    ]),
    annotations: additiveWrite,
    access: "write",
    meter: {
      tier: "dispatch",
      charge: (_input, output) =>
        output.claimed === true ? { tier: "dispatch", units: (output as { claims: unknown[] }).claims.length } : null,
    },
    handler: (ctx, input) => nextBatch(ctx, input),
  }),
  defineTool({
    name: "claim_issue",
    title: "Claim a named issue",
    group: "work loop",
    description:
      "Claims one specific issue by identifier, ignoring lanes. Refused with a reason you can act on: CONTAINER " +
      "(work:false), ALREADY_CLAIMED (names the holder and expiry), STATUS_NOT_CLAIMABLE, BLOCKED (lists the open " +
      "blockers), SELF_REVIEW, CLAIM_CAP. Use next_issue unless you were told to take this exact issue.",
    input: claimIssueInput,
    output: claimOutput,
    annotations: additiveWrite,
    access: "write",
    meter: { tier: "dispatch" },
    handler: (ctx, input) => claimIssue(ctx, input),
  }),
  defineTool({
    name: "check_claim",
    title: "Check a claim",
    group: "work loop",
    description:
      "Answers whether you (this key) hold an issue right now: youHold, its status, the current holder and when " +
      "the lease expires. Call it after a pause to know whether to keep working or stop.",
    input: checkClaimInput,
    output: z.object({
      identifier: z.string(),
      status: z.enum(issueStatuses),
      held: z.boolean(),
      youHold: z.boolean(),
      holder: holderOutput.nullable(),
      expiresAt: z.string().nullable(),
      fence: z.number().int(),
      recover: z.string().optional().describe("when you hold it: how to get a lost claimToken back"),
    }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => checkClaim(ctx, input),
  }),
  defineTool({
    name: "heartbeat",
    title: "Renew a lease",
    group: "work loop",
    description:
      "Renews your lease on a claimed issue for another lease period. Call it before any long silent stretch " +
      "(builds, test runs, waiting on CI): only heartbeat and checkpoint renew a lease; comments and status edits " +
      "do not. A released, expired or superseded claimToken is refused with STALE_CLAIM: stop work on that issue.",
    input: heartbeatInput,
    output: z.object({ identifier: z.string(), expiresAt: z.string(), fence: z.number().int() }),
    annotations: idempotentWrite,
    access: "wind-down",
    meter: { tier: "heartbeat" },
    handler: (ctx, input) => heartbeat(ctx, input),
  }),
  defineTool({
    name: "checkpoint",
    title: "Record a checkpoint",
    group: "work loop",
    description:
      "Records handoff notes on an issue you hold (done so far, next steps, gotchas, a free note, the branch) and " +
      "renews the lease. The latest checkpoint survives release and reclaim and is handed to whoever claims the " +
      "issue next, so they resume instead of restarting. Call it at every meaningful step.",
    input: checkpointInput,
    output: z.object({
      identifier: z.string(),
      expiresAt: z.string(),
      fence: z.number().int(),
      checkpoint: checkpointOutput.nullable(),
    }),
    annotations: additiveWrite,
    access: "wind-down",
    meter: { tier: "work" },
    handler: (ctx, input) => checkpoint(ctx, input),
  }),
  defineTool({
    name: "release_issue",
    title: "Release an issue",
    group: "work loop",
    description:
      "Gives a held issue back to the pool; an optional note is kept as a checkpoint for the next claimant. The " +
      "clean way to stop working on something: a status write never frees a lease. Your claimToken is dead after this.",
    input: releaseIssueInput,
    output: z.object({ identifier: z.string(), released: z.boolean(), status: z.enum(issueStatuses) }),
    annotations: destructiveWrite,
    access: "wind-down",
    meter: { tier: "plumbing" },
    handler: (ctx, input) => releaseIssue(ctx, input),
  }),
];
