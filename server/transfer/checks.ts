import { z } from "zod";
import { memberRoles, memberStatuses, issueStatuses, relationTypes, verificationStates } from "../../db/schema/index.ts";
import { invalidInput, unstorableText, unstorableTextIn } from "../errors.ts";
import { BODY_MAX_CHARS, commitShaSchema, obsoleteAttachmentInput, retractCommentInput, saveAttachmentInput, saveCommentInput, saveIssueInput, saveLabelInput } from "../issues/schemas.ts";
import { prefixSchema, runtimeSchema } from "../orgs/index.ts";
import { checkpointInput } from "../queue/schemas.ts";
import { verificationSettings } from "../verification/settings.ts";
import type { Section, SectionRecord } from "./format.ts";

/**
 * What an imported record must be (decision 037): every field the import writes, with the checks
 * the live tools apply to the same value: links http(s) only and at most 2,000 characters (as
 * `save_attachment`), titles, bodies, comments, notes, labels, prefixes, runtimes and branch
 * names within the live limits (a body within the Markdown renderer's, BODY_MAX_CHARS). A file's
 * bytes are decoded and its type sniffed by the import itself, as `save_attachment_file` does.
 * The values are checked, not rewritten: what the export holds is what is stored.
 */
const instant = z.iso.datetime();
const id = z.string().min(1).max(200);
const ref = id.nullable();
const text = (max: number) => z.string().max(max);

const person = z.looseObject({
  id,
  email: z.email().max(320),
  name: text(1000),
  member: z.object({ role: z.enum(memberRoles), status: z.enum(memberStatuses), since: instant }).nullable(),
});

const project = z.looseObject({
  prefix: prefixSchema,
  name: z.string().trim().min(1).max(100),
  nextNumber: z.number().int().min(1),
  createdAt: instant,
  verification: verificationSettings.optional(),
  oldPrefixes: z.array(prefixSchema).max(100).optional(),
});

const label = z.looseObject({ name: saveLabelInput.shape.name, color: saveLabelInput.shape.color.unwrap().nullable(), createdAt: instant });

const agent = z.looseObject({
  id,
  userId: id,
  project: z.string().max(10).nullable(),
  runtime: runtimeSchema,
  keyPrefix: text(32),
  claimCap: z.number().int().min(1).nullable(),
  parentKeyId: ref,
  createdAt: instant,
  lastUsedAt: instant.nullable(),
  revokedAt: instant.nullable(),
  expiresAt: instant.nullable().optional(),
});

const note = checkpointInput.shape.done.unwrap().nullable();
const branch = checkpointInput.shape.branch.unwrap().nullable();

const issue = z.looseObject({
  id,
  identifier: z.string().min(1).max(40),
  project: z.string().min(1).max(10),
  number: z.number().int().positive(),
  title: saveIssueInput.shape.title.unwrap(),
  body: z.string().max(BODY_MAX_CHARS).nullable(),
  work: z.boolean(),
  // The same list save_issue takes; absent from exports written before it was added.
  changeType: saveIssueInput.shape.changeType.unwrap().nullable().optional(),
  status: z.enum(issueStatuses),
  priority: z.number().int().min(0).max(4),
  triage: z.enum(["pending", "accepted"]).nullable().optional(),
  assigneeId: ref,
  authorId: ref,
  submitterId: ref.optional(),
  parent: z.string().max(40).nullable(),
  noDependency: saveIssueInput.shape.noDependency.unwrap().nullable(),
  cancelReason: saveIssueInput.shape.cancelReason.unwrap().nullable(),
  dueAt: instant.nullable(),
  dueSetAt: instant.nullable(),
  fence: z.number().int().min(0),
  firstClaimedAt: instant.nullable(),
  // Absent from exports written before it was added.
  reviewSince: instant.nullable().optional(),
  branch,
  // Absent from exports written before they were added.
  verification: z.enum(verificationStates).nullable().optional(),
  evidence: z
    .object({ commit: commitShaSchema.nullable(), branch: z.string().min(1).max(255).nullable(), pr: z.string().min(1).max(500).nullable() })
    .nullable()
    .optional(),
  createdAt: instant,
  updatedAt: instant,
  // Absent from exports written before it was added.
  linear: z.object({ id: z.string().min(1).max(200), estimate: z.number().nullable() }).nullable().optional(),
  labels: z.array(saveLabelInput.shape.name).max(50),
  relations: z.array(z.looseObject({ type: z.enum(relationTypes), target: z.string().min(1).max(40), createdAt: instant })),
  comments: z.array(
    z.looseObject({
      id,
      parentId: ref,
      authorId: ref,
      keyId: ref,
      runtime: text(64).nullable(),
      body: saveCommentInput.shape.body,
      createdAt: instant,
      retractedAt: instant.nullable(),
      retractNote: retractCommentInput.shape.note.nullable(),
    }),
  ),
  attachments: z.array(
    z
      .looseObject({
        url: saveAttachmentInput.shape.url.nullable(),
        title: saveAttachmentInput.shape.title.unwrap().nullable(),
        authorId: ref,
        keyId: ref,
        createdAt: instant,
        obsoletedAt: instant.nullable(),
        obsoleteReason: obsoleteAttachmentInput.shape.reason.nullable(),
        file: z.looseObject({ contentType: z.string().max(200), sizeBytes: z.number().int().min(0), contentBase64: z.string() }).nullable(),
      })
      .refine((a) => (a.url === null) !== (a.file === null), "is a link or a file, one of the two"),
  ),
  checkpoints: z.array(
    z.looseObject({
      userId: ref,
      keyId: ref,
      runtime: text(64).nullable(),
      done: note,
      next: note,
      gotchas: note,
      note,
      branch,
      createdAt: instant,
    }),
  ),
});

const activity = z.looseObject({
  issue: z.string().max(40).nullable(),
  kind: z.string().min(1).max(100),
  actorId: ref,
  keyId: ref,
  runtime: text(64).nullable(),
  facts: z.record(z.string(), z.unknown()).nullable(),
  detail: z.record(z.string(), z.unknown()).nullable(),
  createdAt: instant,
});

const schemas: { [S in Section]: z.ZodType } = { people: person, projects: project, labels: label, agents: agent, issues: issue, activity };

/** The record as the live tools would take it, or INVALID_INPUT naming the field and the rule. */
export function checkRecord<S extends Section>(section: S, record: unknown): SectionRecord[S] {
  // As every door refuses (server/errors.ts): no text no column can store, wherever it is in the record.
  const unstorable = unstorableTextIn(record);
  if (unstorable !== null) throw unstorableText(`${section}: ${unstorable}`);
  const checked = schemas[section].safeParse(record);
  if (!checked.success) {
    const problem = checked.error.issues[0]!;
    const name = section === "issues" && record && typeof record === "object" ? `issue ${String((record as { identifier?: unknown }).identifier)}` : section;
    throw invalidInput(`${name}: ${problem.path.join(".") || "the record"} ${problem.message}`, "Pass the file as the export wrote it: an imported record meets the same rules as the tools that write it.");
  }
  return record as SectionRecord[S];
}
