import fs from "node:fs";
import path from "node:path";
import type { Ctx } from "../context.ts";
import { saveAttachment, obsoleteAttachment } from "../issues/attachments.ts";
import { saveAttachmentFile } from "../issues/attachments-files.ts";
import { retractComment, saveComment } from "../issues/comments.ts";
import { addRelation, saveIssue } from "../issues/index.ts";
import { saveLabel } from "../issues/labels.ts";
import { checkpoint, claimIssue, releaseIssue } from "../queue/index.ts";
import type { SeededOrg } from "../testing/fixtures.ts";
import { exportOrg, type exportInput } from "./export.ts";
import type { z } from "zod";
import { createProject } from "../orgs/index.ts";
import { suspendMember } from "../orgs/members.ts";
import { peopleOf } from "../orgs/testing.ts";

/** The export as one string (tests read small orgs whole). */
export async function exportText(ctx: Ctx, input: z.input<typeof exportInput> = {}): Promise<string> {
  let text = "";
  for await (const chunk of (await exportOrg(ctx, input)).chunks) text += chunk;
  return text;
}

export async function writeExport(ctx: Ctx, dir: string): Promise<string> {
  const file = path.join(dir, `export-${Math.random().toString(36).slice(2)}.json`);
  await fs.promises.writeFile(file, await exportText(ctx));
  return file;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An export with what a round trip may change replaced (docs/export-format.md): every id by
 * its order of first appearance, and the header's exportedAt and org id, name and creation.
 */
export function comparable(exportJson: string): unknown {
  const seen = new Map<string, string>();
  const walk = (value: unknown): unknown => {
    if (typeof value === "string" && UUID.test(value)) {
      if (!seen.has(value)) seen.set(value, `id#${seen.size}`);
      return seen.get(value);
    }
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    return value;
  };
  const doc = JSON.parse(exportJson) as { exportedAt: string; org: Record<string, unknown> };
  doc.exportedAt = "-";
  doc.org = { ...doc.org, id: "-", name: "-", createdAt: "-" };
  return walk(doc);
}

/**
 * Gives an org one of everything an export carries: a container with children, every relation
 * type, labels with colours, a threaded and retracted discussion, link and file attachments
 * (one obsolete), a claim's checkpoints, a release, a finish and a cancel, a deadline.
 */
export async function furnishOrg(org: SeededOrg): Promise<void> {
  const { alice, bob } = org.agents;
  const a = alice.ctx;
  await saveLabel(a, { name: "bug", color: "#ff0000" });
  await saveLabel(a, { name: "ui", color: "#00aaff" });
  const epic = await saveIssue(a, { title: "Epic", work: false, changeType: "feat", noDependency: "tracking", body: "the **whole** thing" });
  const first = await saveIssue(a, { title: "First = step", work: true, changeType: "feat", noDependency: "starts", parent: epic.identifier, labels: ["bug"], priority: 2, dueAt: "2027-01-15" });
  const second = await saveIssue(a, { title: "Second", work: true, changeType: "feat", blockedBy: [first.identifier], parent: epic.identifier, labels: ["bug", "ui"], assignee: "me" });
  const third = await saveIssue(bob.ctx, { title: "Third", work: true, changeType: "feat", noDependency: "alone", priority: 1 });
  const fourth = await saveIssue(bob.ctx, { title: "Fourth", work: true, changeType: "feat", noDependency: "alone" });
  await addRelation(a, { sourceId: third.identifier, targetId: second.identifier, type: "related" });
  await addRelation(a, { sourceId: fourth.identifier, targetId: third.identifier, type: "duplicate" });
  await addRelation(a, { sourceId: fourth.identifier, targetId: second.identifier, type: "blocked_by" });
  const top = await saveComment(a, { issue: first.identifier, body: "How do we start?" });
  const reply = await saveComment(bob.ctx, { issue: first.identifier, body: "With tests.", parent: top.id });
  await saveComment(a, { issue: first.identifier, body: "Agreed.", parent: reply.id });
  await retractComment(a, { comment: top.id, note: "asked twice" });
  const link = await saveAttachment(a, { issue: first.identifier, url: "https://example.com/spec", title: "Spec" });
  await saveAttachment(a, { issue: first.identifier, url: "https://example.com/spec-2", title: "Spec 2" });
  await obsoleteAttachment(a, { attachment: link.id, reason: "superseded" });
  await saveAttachmentFile(a, { issue: first.identifier, filename: "notes.txt", contentBase64: Buffer.from("plain notes\n").toString("base64") });
  const claim = await claimIssue(bob.ctx, { identifier: first.identifier });
  await checkpoint(bob.ctx, { identifier: first.identifier, claimToken: claim.claimToken!, done: "wrote tests", next: "make them pass" });
  await releaseIssue(bob.ctx, { identifier: first.identifier, claimToken: claim.claimToken!, note: "lunch" });
  const again = await claimIssue(alice.ctx, { identifier: first.identifier });
  await checkpoint(alice.ctx, { identifier: first.identifier, claimToken: again.claimToken!, gotchas: "flaky clock" });
  await saveIssue(alice.ctx, { identifier: first.identifier, status: "done", claimToken: again.claimToken! });
  await saveIssue(bob.ctx, { identifier: fourth.identifier, status: "canceled", cancelReason: "a duplicate" });
  // A second project whose issue is blocked across projects; a suspended member.
  await createProject(a.db, { orgId: org.orgId, name: "Ops", prefix: "OPS" });
  await saveIssue(a, { project: "OPS", title: "Deploy", work: true, changeType: "feat", blockedBy: [second.identifier] });
  const { memberIds } = await peopleOf(a, org);
  await suspendMember(a, { memberId: memberIds.carol });
}
