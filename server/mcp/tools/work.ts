import { z } from "zod";
import { issueStatuses } from "../../../constants/statuses.ts";
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
import { claimStatuses } from "../../queue/lease.ts";
import { checkpointOutput, claimOutput, holderOutput, issueSummaryOutput, nothingClaimableOutput } from "../outputs.ts";
import { additiveWrite, defineTool, idempotentWrite, readOnly } from "../tool.ts";
import { issueLanding } from "../footer.ts";

export const workTools = [
  defineTool({
    name: "next_issue",
    title: "Claim the next issue",
    group: "work loop",
    description:
      "Call when ready for work: claims the most urgent unblocked issue in your lanes (your human's or " +
      "unassigned) with its claimToken, branch, checkpoint and latest discussion. Resume activeClaims " +
      "(others you hold) first; wave: what comes next, not reserved. Your MCP session's calls renew the " +
      "lease. Nothing claimable: wait retryAfter seconds, or allLanes:true for otherLanes.",
    input: nextIssueInput,
    output: z.union([claimOutput, nothingClaimableOutput]),
    annotations: additiveWrite,
    handler: (ctx, input) => nextIssue(ctx, input),
    landsIn: issueLanding,
  }),
  defineTool({
    name: "next_batch",
    title: "Plan or claim a batch",
    group: "work loop",
    description:
      "Call to fan out to parallel agents: up to n dispatchable issues in dispatch order, no two linked in " +
      "any way. claim:true claims them all at once, each as next_issue would.",
    input: nextBatchInput,
    output: z.union([
      z.object({ claimed: z.literal(true), claims: z.array(claimOutput) }),
      z.object({ claimed: z.literal(false), issues: z.array(issueSummaryOutput) }),
      nothingClaimableOutput.extend({ claims: z.array(claimOutput).optional(), issues: z.array(issueSummaryOutput).optional() }),
    ]),
    annotations: additiveWrite,
    handler: (ctx, input) => nextBatch(ctx, input),
    landsIn: (batch) => ("claims" in batch && batch.claims?.length ? batch.claims.map((claim) => claim.identifier) : null),
  }),
  defineTool({
    name: "claim_issue",
    title: "Claim a named issue",
    group: "work loop",
    description:
      "Call only when told to take one exact issue (else next_issue): claims it, ignoring lanes. Your live " +
      "claimToken (after a restart), or a call from the holding session, takes the lease back (rebound) " +
      "with a new token.",
    input: claimIssueInput,
    output: claimOutput,
    annotations: additiveWrite,
    handler: (ctx, input) => claimIssue(ctx, input),
    landsIn: issueLanding,
  }),
  defineTool({
    name: "check_claim",
    title: "Check a claim",
    group: "work loop",
    description:
      "Call after a pause to know whether to keep working: whether this session holds it (unknown_session: " +
      "your key does, but you sent no session id). Renews nothing.",
    input: checkClaimInput,
    output: z.object({
      identifier: z.string(),
      status: z.enum(claimStatuses),
      issueStatus: z.enum(issueStatuses),
      held: z.boolean(),
      youHold: z.boolean(),
      yourKey: z.boolean(),
      renewedByYourCalls: z.boolean(),
      lastRenewedAt: z.string().nullable(),
      holder: holderOutput.nullable(),
      expiresAt: z.string().nullable(),
      fence: z.number().int(),
      recover: z.string().optional(),
      stalled: z.boolean().optional(),
      lastProgressAt: z.string().optional(),
    }),
    annotations: readOnly,
    handler: (ctx, input) => checkClaim(ctx, input),
  }),
  defineTool({
    name: "heartbeat",
    title: "Renew a lease",
    group: "work loop",
    description:
      "Call before a silence longer than the lease (builds, CI), or each lease period without an MCP " +
      "session: renews your lease. STALE_CLAIM: stop, unless it says youHold.",
    input: heartbeatInput,
    output: z.object({ identifier: z.string(), expiresAt: z.string(), fence: z.number().int() }),
    annotations: idempotentWrite,
    handler: (ctx, input) => heartbeat(ctx, input),
  }),
  defineTool({
    name: "checkpoint",
    title: "Record a checkpoint",
    group: "work loop",
    description:
      "Call at each meaningful step of work you hold: handoff notes for whoever resumes it, surviving release " +
      "and reclaim (a field left out keeps its value; \"\" clears it); renews the lease.",
    input: checkpointInput,
    output: z.object({
      identifier: z.string(),
      expiresAt: z.string(),
      fence: z.number().int(),
      checkpoint: checkpointOutput.nullable(),
    }),
    annotations: additiveWrite,
    handler: (ctx, input) => checkpoint(ctx, input),
  }),
  defineTool({
    name: "release_issue",
    title: "Release an issue",
    group: "work loop",
    description:
      "Call to give back an issue you hold unfinished (a status write never frees a lease); your claimToken " +
      "dies.",
    input: releaseIssueInput,
    output: z.object({ identifier: z.string(), released: z.boolean(), status: z.enum(issueStatuses), held: z.literal(false), message: z.string() }),
    annotations: idempotentWrite,
    handler: (ctx, input) => releaseIssue(ctx, input),
  }),
];
