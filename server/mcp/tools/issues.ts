import { z } from "zod";
import { addRelation, getIssue, listIssues, removeRelation, saveIssue } from "../../issues/index.ts";
import { getIssueInput, listIssuesInput, relationInput, saveIssueInput } from "../../issues/schemas.ts";
import { issueOutput, issueSummaryOutput } from "../outputs.ts";
import { defineTool, destructiveWrite, idempotentDestructiveWrite, idempotentWrite, readOnly } from "../tool.ts";

const storedRelationType = z.enum(["blocks", "related", "duplicate"]).describe("blocked_by is stored as blocks, reversed");

export const issueTools = [
  defineTool({
    name: "save_issue",
    title: "Create or update an issue",
    group: "issues",
    description:
      "Creates an issue (omit identifier) or updates one (pass it). Creating needs title, work (true: a unit an " +
      "agent executes; false: a tracking container, never dispatched) and a dependency declaration: blockedBy " +
      "(identifiers it waits on) or noDependency (one line on why it depends on nothing). Finishing goes through " +
      "here with your claimToken: status done, or status review with assignee set to a reviewer other than you " +
      "(this frees your lease and keeps your checkpoint). canceled needs cancelReason. labels replaces the set; " +
      "dueAt takes epoch ms, an ISO instant or YYYY-MM-DD (end of that day in the org's time zone). A status write " +
      "never frees a lease; release_issue does.",
    input: saveIssueInput,
    output: issueOutput,
    annotations: destructiveWrite,
    access: "write",
    meter: {
      tier: "work",
      charge: (input) =>
        !input.identifier || input.body !== undefined ? { tier: "work", units: 1 } : { tier: "bookkeeping", units: 1 },
    },
    handler: (ctx, input) => saveIssue(ctx, input),
  }),
  defineTool({
    name: "get_issue",
    title: "Get an issue",
    group: "issues",
    description:
      "The full issue by identifier (like RTSC-42): body, status, lane, labels, relations and which blockers are " +
      "still open, deadline state (slaState, time remaining), effective level, the live lease if any, the latest " +
      "checkpoint and the branch. Read it before working on an issue you were handed.",
    input: getIssueInput,
    output: issueOutput,
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => getIssue(ctx, input),
  }),
  defineTool({
    name: "list_issues",
    title: "List issues",
    group: "issues",
    description:
      "Issues in dispatch order (most urgent first), filtered by status (one or several; default: every open " +
      "status), priority, label, assignee, author, slaState or project prefix; limit defaults to 50 (max 200). " +
      "Compact lines; get_issue has the detail.",
    input: listIssuesInput,
    output: z.object({ issues: z.array(issueSummaryOutput) }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => listIssues(ctx, input),
  }),
];

export const graphTools = [
  defineTool({
    name: "add_relation",
    title: "Relate two issues",
    group: "graph",
    description:
      "Adds a relation from sourceId to targetId: blocks / blocked_by are dependency edges that dispatch obeys (an " +
      "issue is not handed out while a blocker is open, and a blocker inherits the urgency of what it blocks); " +
      "related and duplicate are informational. A dependency cycle is refused with CYCLE. Idempotent.",
    input: relationInput,
    output: z.object({ sourceId: z.string(), targetId: z.string(), type: storedRelationType, added: z.boolean() }),
    annotations: idempotentWrite,
    access: "write",
    meter: { tier: "dispatch" },
    handler: (ctx, input) => addRelation(ctx, input),
  }),
  defineTool({
    name: "remove_relation",
    title: "Remove a relation",
    group: "graph",
    description:
      "Removes a relation added with add_relation (same arguments). Removing a dependency edge can make the " +
      "blocked issue dispatchable at once. Idempotent: removed says whether there was anything to remove.",
    input: relationInput,
    output: z.object({ sourceId: z.string(), targetId: z.string(), type: storedRelationType, removed: z.boolean() }),
    annotations: idempotentDestructiveWrite,
    access: "write",
    meter: { tier: "bookkeeping" },
    handler: (ctx, input) => removeRelation(ctx, input),
  }),
];
