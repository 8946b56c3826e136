import { z } from "zod";
import { addRelation, getIssue, listIssues, removeRelation, saveIssue } from "../../issues/index.ts";
import { getIssueInput, listIssuesInput, relationInput, saveIssueInput } from "../../issues/schemas.ts";
import { issueOutput, issueSummaryOutput } from "../outputs.ts";
import { additiveWrite, defineTool, idempotentDestructiveWrite, idempotentWrite, readOnly } from "../tool.ts";
import { issueLanding } from "../footer.ts";

const storedRelationType = z.enum(["blocks", "related", "duplicate"]).describe("blocked_by is stored as blocks, reversed");

export const issueTools = [
  defineTool({
    name: "save_issue",
    title: "Create or update an issue",
    group: "issues",
    description:
      "Call to file an issue (no identifier), change one, or finish work you hold. Creating needs title, " +
      "work (true: a unit an agent executes; false: a container, never dispatched), changeType, and " +
      "blockedBy or noDependency; look-alikes refuse it until reviewedSimilar names them. Finish with your " +
      "claimToken: done with evidence, or review with handoff (what you built, where) and another reviewer " +
      "as assignee. Accept a review by claiming it, then done. canceled needs cancelReason.",
    input: saveIssueInput,
    output: issueOutput,
    annotations: additiveWrite,
    handler: (ctx, input) => saveIssue(ctx, input),
    landsIn: issueLanding,
  }),
  defineTool({
    name: "get_issue",
    title: "Get an issue",
    group: "issues",
    description:
      "Call before working on an issue handed to you: the whole issue (like RTSC-42), its relations, " +
      "blockers, deadline, lease and checkpoint.",
    input: getIssueInput,
    output: issueOutput,
    annotations: readOnly,
    handler: (ctx, input) => getIssue(ctx, input),
  }),
  defineTool({
    name: "list_issues",
    title: "List issues",
    group: "issues",
    description:
      "Call to survey or search the backlog: issues in dispatch order, open ones unless status says " +
      "otherwise; paged (pass nextCursor as cursor).",
    input: listIssuesInput,
    output: z.object({ issues: z.array(issueSummaryOutput), nextCursor: z.string().optional() }),
    annotations: readOnly,
    handler: (ctx, input) => listIssues(ctx, input),
  }),
];

export const graphTools = [
  defineTool({
    name: "add_relation",
    title: "Relate two issues",
    group: "graph",
    description:
      "Call to record that an issue waits on another (blocks / blocked_by; the blocker inherits its " +
      "urgency), or that two are related or duplicates. Cycles are refused.",
    input: relationInput,
    output: z.object({ sourceId: z.string(), targetId: z.string(), type: storedRelationType, added: z.boolean() }),
    annotations: idempotentWrite,
    handler: (ctx, input) => addRelation(ctx, input),
  }),
  defineTool({
    name: "remove_relation",
    title: "Remove a relation",
    group: "graph",
    description:
      "Call to undo add_relation (same arguments); a removed dependency can make an issue dispatchable at " +
      "once.",
    input: relationInput,
    output: z.object({ sourceId: z.string(), targetId: z.string(), type: storedRelationType, removed: z.boolean() }),
    annotations: idempotentDestructiveWrite,
    handler: (ctx, input) => removeRelation(ctx, input),
  }),
];
