import { z } from "zod";
import { getAttachment, listAttachments, obsoleteAttachment, saveAttachment } from "../../issues/attachments.ts";
import {
  getAttachmentInput,
  listAttachmentsInput,
  obsoleteAttachmentInput,
  saveAttachmentInput,
} from "../../issues/schemas.ts";
import { additiveWrite, defineTool, idempotentDestructiveWrite, readOnly } from "../tool.ts";

const attachmentOutput = z.object({
  id: z.string(),
  issue: z.string(),
  url: z.string(),
  title: z.string().nullable(),
  authorId: z.string().nullable(),
  obsolete: z.boolean(),
  obsoleteReason: z.string().nullable(),
  createdAt: z.string(),
});

export const attachmentTools = [
  defineTool({
    name: "save_attachment",
    title: "Attach a link",
    group: "attachments",
    description:
      "Attaches a link (pull request, log, design, build artifact) to an issue, with an optional title. Attach the " +
      "pull request before finishing so the reviewer finds it.",
    input: saveAttachmentInput,
    output: attachmentOutput,
    annotations: additiveWrite,
    access: "write",
    meter: { tier: "work" },
    handler: (ctx, input) => saveAttachment(ctx, input),
  }),
  defineTool({
    name: "list_attachments",
    title: "List attachments",
    group: "attachments",
    description: "The attachments of an issue, oldest first; obsolete ones are flagged with their reason, not hidden.",
    input: listAttachmentsInput,
    output: z.object({ issue: z.string(), attachments: z.array(attachmentOutput) }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => listAttachments(ctx, input),
  }),
  defineTool({
    name: "get_attachment",
    title: "Get an attachment",
    group: "attachments",
    description:
      "One attachment by id (ids come from list_attachments): its URL, title, who attached it, and whether it is " +
      "obsolete and why.",
    input: getAttachmentInput,
    output: attachmentOutput,
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => getAttachment(ctx, input),
  }),
  defineTool({
    name: "obsolete_attachment",
    title: "Mark an attachment obsolete",
    group: "attachments",
    description:
      "The delete-equivalent for attachments: marks one obsolete with a reason (a superseded pull request, a stale " +
      "log). The record stays. Idempotent.",
    input: obsoleteAttachmentInput,
    output: attachmentOutput,
    annotations: idempotentDestructiveWrite,
    access: "write",
    meter: { tier: "bookkeeping" },
    handler: (ctx, input) => obsoleteAttachment(ctx, input),
  }),
];
