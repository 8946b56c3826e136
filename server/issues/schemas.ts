import { z } from "zod";
import { issueStatuses, slaStates, type IssueStatus } from "../../db/schema/index.ts";
import { openStatuses } from "../../constants/statuses.ts";
import { changeTypes } from "../../constants/change-types.ts";
import { pageArgs } from "../paging.ts";

/** Input schemas of the issue surface, defined once and reused by MCP tools, the Dash and the CLI. */
export const identifierSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z][A-Za-z0-9]{1,9}-[1-9][0-9]{0,8}$/, "an issue identifier looks like RTSC-42")
  .transform((v) => v.toUpperCase());

export const statusSchema = z.enum(issueStatuses);

/**
 * Priority names as agents write them, by number. Published without a description: the names
 * come in the order of their numbers, and tools/list has a budget (issue 32).
 */
const priorityNames = { none: 0, urgent: 1, high: 2, medium: 3, low: 4 } as const;
const priorityError = 'a priority is 0-4 or a name: "none" (0), "urgent" (1), "high" (2), "medium" (3), "low" (4)';
export const prioritySchema = z
  .union(
    [
      z.number().int().min(0).max(4),
      z
        .enum(Object.keys(priorityNames) as [keyof typeof priorityNames, ...(keyof typeof priorityNames)[]])
        .transform((name) => priorityNames[name]),
    ],
    { error: priorityError },
  );

/** list_issues' status groups, expanded to the statuses they stand for. */
const statusGroups = { open: openStatuses, active: ["doing", "review"] } as const;
const statusFilterValues = [...issueStatuses, ...(Object.keys(statusGroups) as (keyof typeof statusGroups)[])] as const;
const statusFilterError = `a status is one of ${issueStatuses.join(", ")}, or a group: open (${statusGroups.open.join(", ")}), active (${statusGroups.active.join(", ")})`;
const statusFilter = z.enum(statusFilterValues, { error: statusFilterError });

/** Epoch milliseconds, an ISO 8601 instant, or a YYYY-MM-DD date (end of that day in the org's time zone). */
export const dueAtSchema = z
  .union([z.number().int().min(0).max(8.64e15), z.string().trim().max(40)])
  .nullable()
  .describe("epoch ms, ISO 8601 or YYYY-MM-DD (day's end, org time zone); null clears");

export const assigneeSchema = z
  .string()
  .trim()
  .min(1)
  .max(320)
  .nullable()
  .describe('email, user id, "me" (your human) or null (unassigned)');

const shortText = (max: number) => z.string().trim().min(1).max(max);
export const claimTokenSchema = z.string().trim().min(1).max(200);
/** A checkpoint's text (and a review's handoff, stored as one). */
export const noteText = z.string().trim().max(20_000);

/** The longest issue body, in characters (the Dash renders no longer Markdown). */
export const BODY_MAX_CHARS = 100_000;

/**
 * A git commit id, full or abbreviated, stored lower-case. Checked by refine rather than a
 * regex: a pattern would be published in tools/list.
 */
export const commitShaSchema = z
  .string()
  .trim()
  .refine((v) => /^[0-9a-fA-F]{7,64}$/.test(v), "a commit is its hex SHA (7 to 64 digits)")
  .transform((v) => v.toLowerCase());

/** What a finish delivered, for CI to verify (decision 045): any of the three; a commit or a request in a project with verification on. */
export const evidenceSchema = z
  .object({
    commit: commitShaSchema.optional(),
    branch: z.string().trim().refine((v) => v.length > 0 && v.length <= 255, "a branch name is 1 to 255 characters").optional(),
    pr: z.union([z.number().int(), z.string().trim()]).transform(String).refine((v) => v.length > 0 && v.length <= 500 && v !== "0", "pr is the request's number or URL").optional(),
  })
  .refine((e) => e.commit !== undefined || e.branch !== undefined || e.pr !== undefined, "evidence names a commit, a branch or a pr");
export type Evidence = z.output<typeof evidenceSchema>;

export const saveIssueInput = z.object({
  // save_issue's description says: omit to create, pass to update.
  identifier: identifierSchema.optional(),
  project: z.string().trim().min(1).max(10).optional().describe("prefix; default: your key's"),
  title: shortText(500).optional(),
  // Limits checked by refine are not published: tools/list has a budget (issue 32).
  body: z.string().refine((v) => v.length <= BODY_MAX_CHARS, `a body is at most ${BODY_MAX_CHARS} characters`).optional().describe("Markdown"),
  // save_issue's description says what work means.
  work: z.boolean().optional(),
  // save_issue's description says creating needs it.
  changeType: z.enum(changeTypes).optional(),
  blockedBy: z.array(identifierSchema).max(100).optional(),
  noDependency: shortText(500).optional().describe("why this issue depends on nothing"),
  status: statusSchema.optional(),
  priority: prioritySchema.optional(),
  assignee: assigneeSchema.optional(),
  labels: z.array(shortText(64)).max(50).optional().describe("replaces the issue's labels"),
  dueAt: dueAtSchema.optional(),
  cancelReason: shortText(2000).optional(),
  triage: z.literal("accepted").optional().describe("people only"),
  parent: identifierSchema.nullable().optional().describe("a container (work:false) issue"),
  claimToken: claimTokenSchema.optional().describe("to finish or cancel an issue you hold"),
  evidence: evidenceSchema.optional(),
  // Entering review only (decision 073): save_issue's description says what it holds.
  handoff: noteText.min(1).optional(),
  // Creating only (decision 066): the issues DUPLICATE_CHECK_REQUIRED named, read; its hint says so.
  reviewedSimilar: z.array(identifierSchema).max(50).optional().describe("look-alikes a refusal named, read"),
});
/** save_issue's arguments as parsed. */
export type SaveInput = z.output<typeof saveIssueInput>;

export const getIssueInput = z.object({ identifier: identifierSchema });

export const listIssuesInput = z.object({
  status: z
    .union([statusFilter, z.array(statusFilter).min(1)], { error: statusFilterError })
    .transform((sent): IssueStatus[] => [...new Set([sent].flat().flatMap((value) => (value in statusGroups ? statusGroups[value as keyof typeof statusGroups] : [value as IssueStatus])))])
    .optional()
    .describe("one or several; open: all but done, canceled; active: doing, review"),
  priority: prioritySchema.optional(),
  label: shortText(64).optional(),
  assignee: assigneeSchema.optional(),
  author: assigneeSchema.describe("as for assignee").optional(),
  slaState: z.enum(slaStates).optional(),
  project: z.string().trim().min(1).max(10).optional(),
  limit: z.number().int().min(1).max(200).default(50),
  cursor: pageArgs.cursor,
});

export const relationTypeInput = z.enum(["blocks", "blocked_by", "related", "duplicate"]);
export const relationInput = z.object({
  sourceId: identifierSchema,
  targetId: identifierSchema,
  type: relationTypeInput,
});

export const saveCommentInput = z.object({
  issue: identifierSchema,
  body: z.string().trim().min(1).max(50_000),
  parent: z.string().uuid().optional().describe("the comment this replies to"),
});
export const listCommentsInput = z.object({ issue: identifierSchema, ...pageArgs });
export const retractCommentInput = z.object({ comment: z.string().uuid(), note: shortText(2000) });

export const saveLabelInput = z.object({
  name: shortText(64),
  color: z.string().trim().regex(/^#[0-9a-fA-F]{6}$/, "a color is #rrggbb").optional(),
});

export const saveAttachmentInput = z.object({
  issue: identifierSchema,
  // Links are handed to agents and shown in the Dash: javascript:, data:, file: and the like never are.
  url: z.url({ protocol: /^https?$/, error: "only http:// and https:// links are accepted; link to where the file is hosted" }).max(2000),
  title: shortText(500).optional(),
});
export const listAttachmentsInput = z.object({ issue: identifierSchema });
export const getAttachmentInput = z.object({ attachment: z.string().uuid() });
export const obsoleteAttachmentInput = z.object({ attachment: z.string().uuid(), reason: shortText(2000) });
