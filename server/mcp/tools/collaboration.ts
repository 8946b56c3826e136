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
      "Call for questions, findings and review feedback people should read (handoff state goes in " +
      "checkpoint): a Markdown comment or a reply (parent). Renews no lease.",
    input: saveCommentInput,
    output: z.object({
      id: z.string(),
      issue: z.string(),
      parent: z.string().nullable(),
      body: z.string(),
      createdAt: z.string(),
    }),
    annotations: additiveWrite,
    handler: (ctx, input) => saveComment(ctx, input),
    landsIn: (comment) => [comment.issue],
  }),
  defineTool({
    name: "list_comments",
    title: "List comments",
    group: "collaboration",
    description:
      "Call to read an issue's discussion, oldest first; paged; retracted comments are flagged.",
    input: listCommentsInput,
    output: z.object({ issue: z.string(), comments: z.array(commentOutput), nextCursor: z.string().optional() }),
    annotations: readOnly,
    handler: (ctx, input) => listComments(ctx, input),
  }),
  defineTool({
    name: "retract_comment",
    title: "Retract a comment",
    group: "collaboration",
    description:
      "Call to take back one of your own comments: strikes it through with a note saying why; nothing is deleted.",
    input: retractCommentInput,
    output: z.object({ id: z.string(), retracted: z.boolean() }),
    annotations: idempotentDestructiveWrite,
    handler: (ctx, input) => retractComment(ctx, input),
  }),
  defineTool({
    name: "save_label",
    title: "Create or recolor a label",
    group: "collaboration",
    description: "Call to create a label or set its color (by name); save_issue's labels creates missing ones too.",
    input: saveLabelInput,
    output: labelOutput,
    annotations: idempotentWrite,
    handler: (ctx, input) => saveLabel(ctx, input),
  }),
  defineTool({
    name: "list_labels",
    title: "List labels",
    group: "collaboration",
    description: "Call before labelling, to reuse the org's label names (with color and issue count).",
    input: z.object({}),
    output: z.object({ labels: z.array(labelOutput.extend({ issues: z.number().int() })) }),
    annotations: readOnly,
    handler: (ctx) => listLabels(ctx),
  }),
];
