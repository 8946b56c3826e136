import { z } from "zod";
import { claimTokenSchema, identifierSchema, noteText } from "../issues/schemas.ts";
import { isBranchName } from "./branch-name.ts";

export const nextIssueInput = z.object({
  allLanes: z.boolean().optional().describe("also consider issues assigned to other people"),
});
export const nextBatchInput = z.object({
  n: z.number().int().min(1).max(25).default(5),
  claim: z.boolean().default(false).describe("false: a free peek"),
  allLanes: z.boolean().optional(),
});
export const claimIssueInput = z.object({ identifier: identifierSchema, claimToken: claimTokenSchema.optional() });
export const checkClaimInput = z.object({ identifier: identifierSchema });
export const heartbeatInput = z.object({ identifier: identifierSchema, claimToken: claimTokenSchema.optional() });
export const checkpointInput = z.object({
  identifier: identifierSchema,
  claimToken: claimTokenSchema.optional(),
  done: noteText.optional().describe("what is finished so far"),
  next: noteText.optional().describe("what the next agent should do"),
  gotchas: noteText.optional().describe("traps and surprises"),
  note: noteText.optional(),
  branch: z
    .string()
    .trim()
    .max(200)
    .refine(isBranchName, "not a branch name git accepts (git check-ref-format --branch); pass the branch you pushed, like rtsc-42/fix-login")
    .optional(),
});
export const releaseIssueInput = z.object({
  identifier: identifierSchema,
  claimToken: claimTokenSchema.optional(),
  note: noteText.optional().describe("left as a checkpoint note for the next claimant"),
});
