import { z } from "zod";
import { getAttachment, listAttachments, obsoleteAttachment, saveAttachment } from "../../issues/attachments.ts";
import { getAttachmentFile, getAttachmentFileInput, saveAttachmentFile, saveAttachmentFileInput } from "../../issues/attachments-files.ts";
import {
  getAttachmentInput,
  listAttachmentsInput,
  obsoleteAttachmentInput,
  saveAttachmentInput,
} from "../../issues/schemas.ts";
import { attachmentOutput, fileFields } from "../outputs.ts";
import { additiveWrite, defineTool, idempotentDestructiveWrite, readOnly } from "../tool.ts";

export const attachmentTools = [
  defineTool({
    name: "save_attachment",
    title: "Attach a link",
    group: "attachments",
    description:
      "Call to link a pull request, log, design or artifact to an issue; attach the pull request before finishing " +
      "so the reviewer finds it.",
    input: saveAttachmentInput,
    output: attachmentOutput,
    annotations: additiveWrite,
    handler: (ctx, input) => saveAttachment(ctx, input),
  }),
  defineTool({
    name: "save_attachment_file",
    title: "Attach a file",
    group: "attachments",
    description:
      "Call to attach a screenshot, log or trace to an issue: its bytes in base64, at most 10 MiB; the type is " +
      "sniffed.",
    input: saveAttachmentFileInput,
    output: attachmentOutput,
    annotations: additiveWrite,
    handler: (ctx, input) => saveAttachmentFile(ctx, input),
  }),
  defineTool({
    name: "list_attachments",
    title: "List attachments",
    group: "attachments",
    description: "Call to see what is linked to an issue, oldest first, obsolete ones flagged with their reason.",
    input: listAttachmentsInput,
    output: z.object({ issue: z.string(), attachments: z.array(attachmentOutput) }),
    annotations: readOnly,
    handler: (ctx, input) => listAttachments(ctx, input),
  }),
  defineTool({
    name: "get_attachment",
    title: "Get an attachment",
    group: "attachments",
    description: "Call for one attachment by id (from list_attachments): URL, title, who attached it, why obsolete.",
    input: getAttachmentInput,
    output: attachmentOutput,
    annotations: readOnly,
    handler: (ctx, input) => getAttachment(ctx, input),
  }),
  defineTool({
    name: "get_attachment_file",
    title: "Download a file attachment",
    group: "attachments",
    description: "Call to read a file attachment (kind file in list_attachments): its bytes in base64, filename and type.",
    input: getAttachmentFileInput,
    output: z.object({
      id: z.string(),
      issue: z.string(),
      filename: z.string(),
      ...fileFields,
      authorId: z.string().nullable(),
      obsolete: z.boolean(),
      obsoleteReason: z.string().nullable(),
      createdAt: z.string(),
      contentBase64: z.string(),
    }),
    annotations: readOnly,
    handler: (ctx, input) => getAttachmentFile(ctx, input),
  }),
  defineTool({
    name: "obsolete_attachment",
    title: "Mark an attachment obsolete",
    group: "attachments",
    description:
      "Call when a link no longer applies (a superseded pull request, a stale log): marks it obsolete with a " +
      "reason, keeping the record.",
    input: obsoleteAttachmentInput,
    output: attachmentOutput,
    annotations: idempotentDestructiveWrite,
    handler: (ctx, input) => obsoleteAttachment(ctx, input),
  }),
];
