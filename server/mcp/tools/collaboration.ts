import { z } from "zod";
import { listComments, retractComment, saveComment } from "../../issues/comments.ts";
import { listLabels, saveLabel } from "../../issues/labels.ts";
import { listCommentsInput, retractCommentInput, saveCommentInput, saveLabelInput } from "../../issues/schemas.ts";
import { additiveWrite, defineTool, idempotentDestructiveWrite, idempotentWrite, readOnly } from "../tool.ts";

const commentOutput = z.object({
  id: z.string(),
  parent: z.string().nullable(),
  authorId: z.string().nullable(),
  runtime: z.string().nullable(),
  body: z.string(),
  retracted: z.boolean(),
  retractedAt: z.string().nullable(),
  retractNote: z.string().nullable(),
  createdAt: z.string(),
});
const labelOutput = z.object({ id: z.string(), name: z.string(), color: z.string().nullable() });

export const collaborationTools = [
  defineTool({
    name: "save_comment",
    title: "Comment on an issue",
    group: "collaboration",
    description:
      "Adds a Markdown comment to an issue, optionally as a reply (parent: a comment id). Use it for questions, " +
      "findings and review feedback that people should read; for handoff state use checkpoint. A comment does not " +
      "renew your lease.",
    input: saveCommentInput,
    output: z.object({
      id: z.string(),
      issue: z.string(),
      parent: z.string().nullable(),
      body: z.string(),
      createdAt: z.string(),
    }),
    annotations: additiveWrite,
    access: "write",
    meter: { tier: "work" },
    handler: (ctx, input) => saveComment(ctx, input),
  }),
  defineTool({
    name: "list_comments",
    title: "List comments",
    group: "collaboration",
    description: "The comment thread of an issue, oldest first, with replies pointing at their parent; retracted comments are flagged, not hidden.",
    input: listCommentsInput,
    output: z.object({ issue: z.string(), comments: z.array(commentOutput) }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => listComments(ctx, input),
  }),
  defineTool({
    name: "retract_comment",
    title: "Retract a comment",
    group: "collaboration",
    description:
      "Strikes one of your own comments through with a note saying why. Nothing is deleted: the record stays " +
      "legible. Idempotent.",
    input: retractCommentInput,
    output: z.object({ id: z.string(), retracted: z.boolean() }),
    annotations: idempotentDestructiveWrite,
    access: "write",
    meter: { tier: "bookkeeping" },
    handler: (ctx, input) => retractComment(ctx, input),
  }),
  defineTool({
    name: "save_label",
    title: "Create or recolor a label",
    group: "collaboration",
    description:
      "Creates a label in the org, or sets its color if it exists (idempotent by name). Labels are attached to " +
      "issues through save_issue's labels argument, which also creates missing ones.",
    input: saveLabelInput,
    output: labelOutput,
    annotations: idempotentWrite,
    access: "write",
    meter: { tier: "bookkeeping" },
    handler: (ctx, input) => saveLabel(ctx, input),
  }),
  defineTool({
    name: "list_labels",
    title: "List labels",
    group: "collaboration",
    description:
      "The org's labels with their colors and how many issues carry each. Call it before labelling so you reuse " +
      "the names the org already has.",
    input: z.object({}),
    output: z.object({ labels: z.array(labelOutput.extend({ issues: z.number().int() })) }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx) => listLabels(ctx),
  }),
];
