import { z } from "zod";
import { slaStates } from "../../db/schema/index.ts";
import { issueStatuses } from "../../constants/statuses.ts";

/**
 * Output schemas of the issue and queue tools: the shapes server/issues and server/queue
 * return (views.ts, queue/index.ts); the type checker holds the services to them. The
 * published JSON Schemas leave objects open, so a field added to a view reaches agents
 * without breaking clients that validate against them.
 */
const iso = z.string().describe("ISO 8601 instant");
const status = z.enum(issueStatuses);

export const personRef = z.object({ userId: z.string(), email: z.string(), name: z.string() });

export const checkpointOutput = z
  .looseObject({
    done: z.string().nullable(),
    next: z.string().nullable(),
    gotchas: z.string().nullable(),
    note: z.string().nullable(),
    branch: z.string().nullable(),
    runtime: z.string().nullable(),
    userId: z.string().nullable(),
    createdAt: iso,
  })
  .describe("the latest handoff notes; they survive release and reclaim");

const linkedIssue = z.object({ identifier: z.string(), status });

export const issueOutput = z.object({
  identifier: z.string(),
  title: z.string(),
  body: z.string().nullable(),
  work: z.boolean(),
  changeType: z.string().nullable(),
  status,
  priority: z.number().int().describe("0 none, 1 urgent, 2 high, 3 medium, 4 low"),
  assignee: personRef.nullable().describe("the lane: who this is for (the reviewer while in review)"),
  author: personRef.nullable(),
  parent: z.string().nullable(),
  children: z.array(z.string()),
  labels: z.array(z.string()),
  dueAt: iso.nullable(),
  slaState: z.enum(slaStates),
  timeRemainingMs: z.number().nullable(),
  ownLevel: z.number().int(),
  effectiveLevel: z.number().int().describe("own level raised by everything this issue blocks; dispatch order"),
  effectiveDueAt: iso.nullable(),
  blockedBy: z.array(linkedIssue),
  blocks: z.array(linkedIssue),
  openBlockers: z.array(z.string()),
  blockedOutsideScope: z.string().optional().describe("open blockers in projects outside your scope, which are not named: they still hold this issue back"),
  related: z.array(z.string()),
  duplicates: z.array(z.string()),
  lease: z
    .looseObject({
      holder: personRef.nullable(),
      holderUserId: z.string(),
      runtime: z.string(),
      keyId: z.string().nullable(),
      expiresAt: iso,
      fence: z.number().int(),
    })
    .nullable()
    .describe("the live claim, if any"),
  held: z.boolean(),
  statusNote: z.string().optional().describe('an unheld doing issue: "doing, unheld: the next claim resumes it"'),
  verification: z.enum(["pending", "stale", "passed", "failed"]).optional().describe("CI's word on the last finish; dependents wait until passed"),
  evidence: z.looseObject({ commit: z.string().nullable(), branch: z.string().nullable(), pr: z.string().nullable() }).optional(),
  fence: z.number().int(),
  checkpoint: checkpointOutput.nullable(),
  branch: z.string(),
  noDependency: z.string().nullable(),
  cancelReason: z.string().nullable(),
  createdAt: iso,
  updatedAt: iso,
  alreadyFinished: z.literal(true).optional().describe("this finish had already succeeded with your claim; nothing was written"),
});

/** The issue in a claim: get_issue's view less what the claim states once at its top (identifier, fence, branch, checkpoint, the lease). */
export const claimedIssueOutput = issueOutput
  .omit({ identifier: true, fence: true, branch: true, checkpoint: true, lease: true, held: true, statusNote: true })
  .describe("the object get_issue returns, less identifier, fence, branch, checkpoint, lease and held, which the claim states");

export const issueSummaryOutput = z.object({
  identifier: z.string(),
  title: z.string(),
  work: z.boolean(),
  status,
  priority: z.number().int(),
  effectiveLevel: z.number().int(),
  assignee: personRef.nullable(),
  dueAt: iso.nullable(),
  slaState: z.enum(slaStates),
  timeRemainingMs: z.number().nullable(),
  held: z.boolean(),
  leaseExpiresAt: iso.nullable(),
  updatedAt: iso,
});

export const holderOutput = z.object({
  userId: z.string(),
  runtime: z.string(),
  keyId: z.string().nullable(),
  fence: z.number().int(),
  expiresAt: iso,
  email: z.string().nullable(),
  name: z.string().nullable(),
});

export const claimOutput = z.object({
  identifier: z.string(),
  claimToken: z.string().describe("pass it to heartbeat, checkpoint, release_issue and the finishing save_issue"),
  fence: z.number().int().describe("rises with every claim of this issue"),
  expiresAt: iso.describe("the lease ends here unless renewed"),
  renewal: z.enum(["calls", "heartbeat"]).describe("calls: this session's own calls renew the lease; heartbeat: only heartbeat and checkpoint do"),
  branch: z.string().describe("the branch to work on"),
  checkpoint: checkpointOutput.nullable(),
  otherClaims: z.number().int().describe("your other live claims"),
  rebound: z.literal(true).optional().describe("you already held it: the same lease, with a new claimToken (the old one is void)"),
  activeClaims: z.array(z.string()).optional().describe("next_issue: this session's other live claims; resume them before piling up more"),
  wave: z
    .array(z.object({ identifier: z.string(), title: z.string(), priority: z.number().int(), effectiveLevel: z.number().int() }))
    .optional()
    .describe("next_issue: up to 5 other ready issues of your lanes in dispatch order, not reserved (advisory)"),
  issue: claimedIssueOutput,
  comments: z
    .array(z.object({ id: z.string(), author: z.string().nullable(), body: z.string(), createdAt: iso }))
    .describe("the latest comments (retracted ones left out), oldest first, each cut to 400 characters"),
  attachments: z
    .array(
      z.object({
        id: z.string(),
        kind: z.enum(["link", "file"]),
        url: z.string().optional(),
        title: z.string().nullable(),
        contentType: z.string().optional(),
        size: z.number().int().optional(),
      }),
    )
    .describe("the latest live attachments, oldest first"),
  omitted: z.string().optional().describe("what the comments and attachments above leave out, and the tool that reads it all"),
});

export const nothingClaimableOutput = z.object({
  claimed: z.literal(false),
  ready: z.number().int().describe("dispatchable issues in your lanes (claimed concurrently if not zero)"),
  otherLanes: z.number().int().describe("ready issues assigned to other people; allLanes:true takes them"),
  activeClaims: z.array(z.string()).optional().describe("issues this session already holds: resume them"),
  retryAfter: z.number().int().describe("seconds to wait before polling again"),
  message: z.string(),
});

export const fileFields = {
  contentType: z.string().nullable().describe("files: sniffed from the bytes"),
  size: z.number().int().nullable().describe("files: bytes"),
};

/** A link or a file (its url the Dash download, its title the filename); published in full by list_attachments (registry.ts). */
export const attachmentOutput = z.object({
  id: z.string(),
  issue: z.string(),
  kind: z.enum(["link", "file"]),
  url: z.string().describe("a link's URL; a file's Dash download (get_attachment_file returns its bytes)"),
  title: z.string().nullable().describe("a file's filename"),
  ...fileFields,
  authorId: z.string().nullable(),
  obsolete: z.boolean(),
  obsoleteReason: z.string().nullable(),
  createdAt: z.string(),
});
