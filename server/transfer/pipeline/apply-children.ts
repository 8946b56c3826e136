import { and, eq, inArray, sql } from "drizzle-orm";
import { query } from "../../../db/client.ts";
import { attachments, comments, importStagedFiles } from "../../../db/schema/index.ts";
import { downloadPath } from "../../issues/attachments-files.ts";
import { newId } from "../../orgs/index.ts";
import { date, digest, inChunks, upsertById, type ApplyCounts, type ApplyScope, type LinkRow, type Links } from "./apply-rows.ts";
import { pointAtFiles } from "./inline-files.ts";
import { insertJson } from "./json-rows.ts";
import type { SourceAttachment, SourceComment, SourceIssue } from "./stream.ts";

/**
 * A page's comments and attachments (./apply.ts applies its issues first): matched on their
 * source ids, or in an org restored from an export on their issue and time; attachments' ids
 * settled before the issues are written, so a text can name a file pasted into it by its path here.
 */

/**
 * Comments and attachments already on this page's issues that no link names: an org restored
 * from an export keeps its issues' links but not their children's. They are matched on (issue,
 * created time, `${source}-import` runtime), so a re-import updates them instead of adding a copy.
 */
export async function restoredChildren(scope: ApplyScope, page: SourceIssue[], links: Links): Promise<Restored> {
  const orphans = page.filter((si) => links.has(si.id) && [...si.comments, ...si.attachments].some((c) => !links.has(c.id)));
  const found: Restored = new Map();
  if (orphans.length === 0) return found;
  const ids = orphans.map((si) => links.get(si.id)!.retascId);
  const runtime = `${scope.source}-import`;
  await inChunks(ids, async (chunk) => {
    const list = sql.join(chunk.map((id) => sql`${id}`), sql`, `);
    const rows = await query<{ kind: string; id: string; issue_id: string; created_at: string }>(
      scope.tx,
      sql`select 'comment' as kind, c.id, c.issue_id, c.created_at from comments c
            where c.org_id = ${scope.orgId} and c.issue_id in (${list}) and c.runtime = ${runtime}
            and not exists (select 1 from linear_links l where l.org_id = c.org_id and l.retasc_id = c.id)
          union all
          select 'attachment', a.id, a.issue_id, a.created_at from attachments a
            where a.org_id = ${scope.orgId} and a.issue_id in (${list})
            and not exists (select 1 from linear_links l where l.org_id = a.org_id and l.retasc_id = a.id)`,
    );
    for (const r of rows) {
      const key = restoredKey(r.kind, r.issue_id, r.created_at);
      found.set(key, [...(found.get(key) ?? []), r.id]);
    }
  });
  return found;
}

/** Restored rows by (kind, issue, created time); two made in the same millisecond are taken in turn. */
export type Restored = Map<string, string[]>;
const restoredKey = (kind: string, issueId: string, createdAt: string) => `${kind}|${issueId}|${new Date(createdAt).toISOString()}`;
const takeRestored = (restored: Restored, kind: string, issueId: string, createdAt: string) => restored.get(restoredKey(kind, issueId, createdAt))?.shift();

/** Threaded comments, replies pointing at their parents; a comment archived at the source is retracted here. */
export async function applyComments(scope: ApplyScope, page: SourceIssue[], issueIds: Map<string, string>, links: Links, restored: Restored, inlineFiles: Map<string, Map<string, string>>, linkRows: LinkRow[]) {
  const { tx, cipher, orgId } = scope;
  const writes: { row: typeof comments.$inferInsert; update: boolean }[] = [];
  for (const si of page) {
    const issueId = issueIds.get(si.id)!;
    const idOf = new Map<string, { id: string; known: boolean }>();
    for (const c of si.comments) {
      const known = links.get(c.id)?.retascId ?? takeRestored(restored, "comment", issueId, c.createdAt);
      idOf.set(c.id, { id: known ?? newId(), known: known !== undefined });
    }
    for (const c of parentsFirst(si.comments)) {
      const body = pointAtFiles(c.body, inlineFiles.get(si.id));
      const hash = digest([body, c.createdAt, c.retractedAt, c.parentId, c.author?.id ?? null]);
      if (links.get(c.id)?.hash === hash) continue;
      const { id, known } = idOf.get(c.id)!;
      writes.push({
        update: known,
        row: {
          id,
          orgId,
          issueId,
          parentId: c.parentId ? (idOf.get(c.parentId)?.id ?? null) : null,
          authorId: scope.ghosts.known(c.author),
          runtime: `${scope.source}-import`,
          bodyEnc: cipher.encrypt(body),
          retractedAt: date(c.retractedAt),
          createdAt: new Date(c.createdAt),
        },
      });
      linkRows.push({ orgId, linearId: c.id, kind: "comment", retascId: id, hash });
    }
  }
  await insertJson(tx, comments, writes.filter((w) => !w.update).map((w) => w.row));
  await upsertById(tx, comments, writes.filter((w) => w.update).map((w) => w.row), ["parentId", "authorId", "runtime", "bodyEnc", "retractedAt", "createdAt"]);
}

/** Every attachment's id here: its link's, a restored org's row (matched as comments are), or a new one. */
export type AttachmentIds = Map<string, { id: string; known: boolean }>;
export function planAttachments(page: SourceIssue[], links: Links, restored: Restored): AttachmentIds {
  const planned: AttachmentIds = new Map();
  for (const si of page) {
    const issueId = links.get(si.id)?.retascId;
    for (const a of si.attachments) {
      const known = links.get(a.id)?.retascId ?? (issueId ? takeRestored(restored, "attachment", issueId, a.createdAt) : undefined);
      planned.set(a.id, { id: known ?? newId(), known: known !== undefined });
    }
  }
  return planned;
}

/** Per issue, the urls its texts name inline that are files here, each to its download path. */
export function inlineFilePaths(page: SourceIssue[], planned: AttachmentIds): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>();
  for (const si of page) {
    const files = new Map(si.attachments.filter((a) => a.inline && a.asFile).map((a) => [a.url, downloadPath(planned.get(a.id)!.id)]));
    if (files.size > 0) out.set(si.id, files);
  }
  return out;
}

/** A reply after the comment it answers, so one multi-row insert never names a parent not yet written. */
function parentsFirst(list: SourceComment[]): SourceComment[] {
  const ids = new Set(list.map((c) => c.id));
  const out: SourceComment[] = [];
  const placed = new Set<string>();
  let rest = list;
  while (rest.length > 0) {
    const ready = rest.filter((c) => !c.parentId || !ids.has(c.parentId) || placed.has(c.parentId));
    // A cycle (hostile input) is cut: what is left goes in as it is.
    const next = ready.length > 0 ? ready : rest;
    for (const c of next) placed.add(c.id);
    out.push(...next);
    rest = rest.filter((c) => !placed.has(c.id));
  }
  return out;
}

/**
 * Attachments as links or files: a file staged for this run (./files.ts) is written with its
 * Dash download as its url and its sealed bytes copied from staging inside the page's
 * transaction, then dropped from staging; one already a file here stays one. The hash tells a
 * file from a link, so a link an earlier run kept becomes a file in place once its download works.
 */
export async function applyAttachments(scope: ApplyScope, page: SourceIssue[], issueIds: Map<string, string>, links: Links, planned: AttachmentIds, linkRows: LinkRow[], counts: ApplyCounts) {
  const { tx, cipher, orgId } = scope;
  const writes: { row: typeof attachments.$inferInsert; update: boolean }[] = [];
  const copies: { attachmentId: string; sourceId: string }[] = [];
  for (const si of page) {
    const issueId = issueIds.get(si.id)!;
    for (const a of si.attachments as SourceAttachment[]) {
      if (a.keptAsLink) {
        counts.linksKept++;
        counts.linkReasons[a.keptAsLink] = (counts.linkReasons[a.keptAsLink] ?? 0) + 1;
      }
      const fields = [a.title, a.url, a.createdAt, a.author?.id ?? null];
      const hash = digest(a.asFile ? [...fields, "file"] : fields);
      const link = links.get(a.id);
      if (link?.hash === hash) continue;
      const { id, known } = planned.get(a.id)!;
      if (a.asFile === "staged") copies.push({ attachmentId: id, sourceId: a.id });
      const url = a.asFile ? downloadPath(id) : a.url;
      writes.push({ update: known, row: { id, orgId, issueId, urlEnc: cipher.encrypt(url), titleEnc: cipher.encrypt(a.title), authorId: scope.ghosts.known(a.author), createdAt: new Date(a.createdAt) } });
      linkRows.push({ orgId, linearId: a.id, kind: "attachment", retascId: id, hash });
    }
  }
  await insertJson(tx, attachments, writes.filter((w) => !w.update).map((w) => w.row));
  await upsertById(tx, attachments, writes.filter((w) => w.update).map((w) => w.row), ["urlEnc", "titleEnc", "authorId", "createdAt"]);
  // The bytes go from staging to the attachment in the database, never through this process; a restored org's file is replaced in place.
  await inChunks(copies, async (chunk) => {
    const pairs = sql.join(chunk.map((c) => sql`(${c.attachmentId}, ${c.sourceId})`), sql`, `);
    const copied = await query<{ attachment_id: string }>(
      tx,
      sql`insert into attachment_files (attachment_id, org_id, content_type, size_bytes, content_enc)
          select v.attachment_id, s.org_id, s.content_type, s.size_bytes, s.content_enc
          from import_staged_files s join (values ${pairs}) as v(attachment_id, source_id) on v.source_id = s.source_id
          where s.run_id = ${scope.runId}
          on conflict (attachment_id) do update set content_type = excluded.content_type, size_bytes = excluded.size_bytes, content_enc = excluded.content_enc
          returning attachment_id`,
    );
    counts.filesCopied += copied.length;
    await tx.delete(importStagedFiles).where(and(eq(importStagedFiles.runId, scope.runId), inArray(importStagedFiles.sourceId, chunk.map((c) => c.sourceId))));
  });
}
