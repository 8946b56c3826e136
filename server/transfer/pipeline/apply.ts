import { and, eq, inArray, sql } from "drizzle-orm";
import { pgArray, query, type Db } from "../../../db/client.ts";
import { activity, attachments, comments, importStagedFiles, issueLabels, issues, labels, linearLinks } from "../../../db/schema/index.ts";
import { sha256, type OrgCipher } from "../../crypto/index.ts";
import { endOfDayIn, rankingColumns, reviewClockOf, reviewSinceAfter, type ReviewClockState } from "../../issues/levels.ts";
import { downloadPath } from "../../issues/attachments-files.ts";
import { indexTerms, type TermsEntry } from "../../issues/similar.ts";
import { isTerminal } from "../../issues/store.ts";
import { newId } from "../../orgs/index.ts";
import type { LinkReason } from "./files.ts";
import type { GhostBook } from "./ghosts.ts";
import { pointAtFiles } from "./inline-files.ts";
import { insertJson, updateFromProposed } from "./json-rows.ts";
import type { SourceAttachment, SourceComment, SourceIssue } from "./stream.ts";

/**
 * Applies one staged page of any source, in the page's one transaction, with multi-row
 * statements (decision 047): every issue, label, comment and attachment in it is created,
 * updated in place or left alone, matched on its source id (linear_links, which holds every
 * source's links). An item whose imported fields hash as last written is not touched at all: no
 * write, no activity. Parents and relations name issues of later pages, so they are set once
 * every page is in (./link.ts).
 */
export interface ApplyScope {
  tx: Db;
  /** The run: its staged files are copied from here. */
  runId: string;
  cipher: OrgCipher;
  orgId: string;
  projectId: string;
  /** The project's prefix: identifiers are `${prefix}-${number}`. */
  prefix: string;
  /** The source's numbers are kept (its prefix is the project's); otherwise new issues take the project's next numbers. */
  keepNumbers: boolean;
  /** The source's name: history says where it came from, comments carry `${source}-import` as runtime. */
  source: string;
  timeZone: string;
  ghosts: GhostBook;
  now: Date;
}

export interface ApplyCounts {
  created: number;
  updated: number;
  unchanged: number;
  comments: number;
  /** Files whose bytes this run copied. */
  filesCopied: number;
  /** Attachments this run read that stay links, and why (../pipeline/files.ts). */
  linksKept: number;
  linkReasons: Partial<Record<LinkReason, number>>;
}

export const noCounts = (): ApplyCounts => ({ created: 0, updated: 0, unchanged: 0, comments: 0, filesCopied: 0, linksKept: 0, linkReasons: {} });

export const digest = (value: unknown) => sha256(JSON.stringify(value));
const date = (iso: string | null) => (iso ? new Date(iso) : null);
export type Links = Map<string, { retascId: string; hash: string }>;
type LinkRow = typeof linearLinks.$inferInsert;

/** Rows per statement where every value is a bound parameter: well under PostgreSQL's 65,535. */
const ROWS = 500;

export async function inChunks<T>(rows: T[], write: (chunk: T[]) => Promise<unknown>, size = ROWS): Promise<void> {
  for (let at = 0; at < rows.length; at += size) await write(rows.slice(at, at + size));
}

export async function linksOf(tx: Db, orgId: string, ids: string[]): Promise<Links> {
  const links: Links = new Map();
  if (ids.length === 0) return links;
  // One array parameter, not one per id: the statement is built and bound in no time whatever the page's size.
  const rows = await query<{ linear_id: string; retasc_id: string; hash: string }>(
    tx,
    sql`select linear_id, retasc_id, hash from linear_links where org_id = ${orgId} and linear_id = any(${pgArray(ids)}::text[])`,
  );
  for (const r of rows) links.set(r.linear_id, { retascId: r.retasc_id, hash: r.hash });
  return links;
}

/** The links as last written, many at once: a link already there takes the new hash (and estimate). */
export async function writeLinks(tx: Db, rows: LinkRow[]): Promise<void> {
  await insertJson(tx, linearLinks, rows, updateFromProposed(["org_id", "linear_id"], ["hash", "estimate"]));
}

export async function setLink(tx: Db, orgId: string, linearId: string, kind: LinkRow["kind"], retascId: string, hash: string, estimate: number | null = null) {
  await writeLinks(tx, [{ orgId, linearId, kind, retascId, hash, estimate }]);
}

/** `insert … on conflict (id) do update` setting `keys` from the proposed row: changed items updated in place, all in one statement. */
async function upsertById<T extends typeof issues | typeof comments | typeof attachments>(tx: Db, table: T, rows: T["$inferInsert"][], keys: (keyof T["$inferInsert"] & string)[]): Promise<void> {
  const columns = table as unknown as Record<string, { name: string }>;
  await insertJson(tx, table, rows, updateFromProposed(["id"], keys.map((k) => columns[k]!.name)));
}

export async function applyPage(scope: ApplyScope, page: SourceIssue[]): Promise<ApplyCounts> {
  const { tx, cipher, orgId } = scope;
  const counts = noCounts();
  const ids = page.flatMap((i) => [i.id, ...i.labels.map((l) => l.id), ...i.comments.map((c) => c.id), ...i.attachments.map((a) => a.id)]);
  const links = await linksOf(tx, orgId, [...new Set(ids)]);
  await scope.ghosts.resolve(page.flatMap((i) => [i.creator, i.assignee, ...i.comments.map((c) => c.author), ...i.attachments.map((a) => a.author)]));
  const linkRows: LinkRow[] = [];
  const labelIds = await applyLabels(scope, page, links, linkRows);
  const history: (typeof activity.$inferInsert)[] = [];
  const created: (typeof issues.$inferInsert)[] = [];
  const changed: { id: string; columns: Omit<typeof issues.$inferInsert, "id" | "orgId" | "projectId" | "number" | "identifier" | "work"> }[] = [];
  const labelRows: (typeof issueLabels.$inferInsert)[] = [];
  // What the duplicate gate reads of each issue written here (decision 066).
  const terms: TermsEntry[] = [];
  const freshTerms: TermsEntry[] = [];
  const fresh = page.filter((si) => !links.has(si.id));
  const numbers = await numbersFor(scope, fresh);
  // Attachments' ids are settled first, so a body can name a file it pasted inline by its path here.
  const restored = await restoredChildren(scope, page, links);
  const attachmentIds = planAttachments(page, links, restored);
  const inlineFiles = inlineFilePaths(page, attachmentIds);
  const issueIds = new Map<string, string>();
  const runtime = `${scope.source}-import`;
  for (const si of page) {
    const { status } = si;
    const body = pointAtFiles(si.body, inlineFiles.get(si.id));
    const authorId = scope.ghosts.known(si.creator);
    const assigneeId = scope.ghosts.known(si.assignee);
    const labelSet = [...new Set(si.labels.map((l) => labelIds.get(l.id)!))].sort();
    const hash = digest({
      title: si.title,
      description: body,
      status,
      priority: si.priority,
      estimate: si.estimate,
      dueDate: si.dueDate,
      times: [si.createdAt, si.updatedAt, si.startedAt, si.completedAt, si.canceledAt],
      // People by their source ids: a claim re-attributes them here without making the issue "changed".
      creator: si.creator?.id ?? null,
      assignee: si.assignee?.id ?? null,
      labels: si.labels.map((l) => l.id).sort(),
    });
    const link = links.get(si.id);
    const dueAt = si.dueDate ? endOfDayIn(si.dueDate, scope.timeZone) : null;
    const dueSetAt = dueAt ? new Date(si.createdAt) : null;
    const terminal = isTerminal(status);
    // A new issue in review: its review clock starts at the import (the sources say no time it entered
    // review); a changed one's follows the rule against what it was (below, once its row is read).
    const reviewSince = reviewSinceAfter({ status: null, triage: null, reviewSince: null }, { status, triage: null }, scope.now);
    const ranking = rankingColumns(Math.round(si.priority), dueAt, dueSetAt, terminal, scope.now, reviewClockOf({ status, reviewSince }));
    const columns = {
      titleEnc: cipher.encrypt(si.title),
      bodyEnc: cipher.encrypt(body),
      status,
      priority: Math.round(si.priority),
      assigneeId,
      authorId,
      dueAt,
      dueSetAt,
      ...ranking,
      effectiveLevel: ranking.ownLevel,
      effectiveDueAt: terminal ? null : dueAt,
      firstClaimedAt: date(si.startedAt),
      reviewSince,
      createdAt: new Date(si.createdAt),
      updatedAt: new Date(si.updatedAt),
    };
    let issueId: string;
    if (!link) {
      issueId = newId();
      const number = numbers.get(si.id)!;
      created.push({ id: issueId, orgId, projectId: scope.projectId, number, identifier: `${scope.prefix}-${number}`, work: true, ...columns });
      freshTerms.push({ id: issueId, title: si.title, body, status });
      for (const labelId of labelSet) labelRows.push({ issueId, labelId });
      const at = (kind: string, when: string | null, actorId: string | null) => {
        if (when) history.push({ orgId, issueId, kind, actorId, runtime, facts: { source: scope.source, status: kind === "created" ? "todo" : status }, createdAt: new Date(when) });
      };
      at("created", si.createdAt, authorId);
      at("started", si.startedAt, assigneeId);
      at("done", si.completedAt, assigneeId);
      at("canceled", si.canceledAt, assigneeId);
      counts.created++;
    } else {
      issueId = link.retascId;
      if (link.hash !== hash) {
        changed.push({ id: issueId, columns });
        terms.push({ id: issueId, title: si.title, body, status });
        for (const labelId of labelSet) labelRows.push({ issueId, labelId });
        history.push({ orgId, issueId, kind: "updated", actorId: null, runtime, facts: { source: scope.source, status }, createdAt: new Date(si.updatedAt) });
        counts.updated++;
      } else counts.unchanged++;
    }
    issueIds.set(si.id, issueId);
    if (!link || link.hash !== hash) linkRows.push({ orgId, linearId: si.id, kind: "issue", retascId: issueId, hash, estimate: si.estimate });
    counts.comments += si.comments.length;
  }
  await insertJson(tx, issues, created);
  if (changed.length > 0) {
    const kept = new Map<string, { number: number; identifier: string; projectId: string }>();
    const before = new Map<string, ReviewClockState>();
    await inChunks(changed, async (chunk) => {
      const rows = await tx
        .select({ id: issues.id, number: issues.number, identifier: issues.identifier, projectId: issues.projectId, status: issues.status, triage: issues.triage, reviewSince: issues.reviewSince })
        .from(issues)
        .where(and(eq(issues.orgId, orgId), inArray(issues.id, chunk.map((c) => c.id))));
      for (const { status, triage, reviewSince, ...r } of rows) {
        kept.set(r.id, r);
        before.set(r.id, { status, triage, reviewSince });
      }
    });
    // A review the source still has in review keeps its clock; one that enters review here starts it now.
    for (const c of changed) {
      const was = before.get(c.id);
      if (!was) continue;
      const reviewSince = reviewSinceAfter(was, { status: c.columns.status!, triage: was.triage }, scope.now);
      const terminal = isTerminal(c.columns.status!);
      const ranking = rankingColumns(c.columns.priority!, c.columns.dueAt ?? null, c.columns.dueSetAt ?? null, terminal, scope.now, reviewClockOf({ status: c.columns.status!, reviewSince }));
      Object.assign(c.columns, ranking, { reviewSince, effectiveLevel: ranking.ownLevel });
    }
    const rows = changed.filter((c) => kept.has(c.id)).map((c) => ({ id: c.id, orgId, work: true, ...kept.get(c.id)!, ...c.columns }));
    await upsertById(tx, issues, rows, Object.keys(changed[0]!.columns) as (keyof typeof issues.$inferInsert & string)[]);
    await inChunks(changed, (chunk) => tx.delete(issueLabels).where(inArray(issueLabels.issueId, chunk.map((c) => c.id))));
  }
  await insertJson(tx, issueLabels, labelRows);
  // A new issue has no terms to replace.
  await indexTerms(tx, cipher, orgId, freshTerms, { fresh: true });
  await indexTerms(tx, cipher, orgId, terms);
  await applyComments(scope, page, issueIds, links, restored, inlineFiles, linkRows);
  await applyAttachments(scope, page, issueIds, links, attachmentIds, linkRows, counts);
  await writeLinks(tx, linkRows);
  await insertJson(tx, activity, history);
  return counts;
}

/** The new issues' numbers: the source's own when kept, else the project's next ones, taken in one statement. */
async function numbersFor(scope: ApplyScope, fresh: SourceIssue[]): Promise<Map<string, number>> {
  if (scope.keepNumbers) return new Map(fresh.map((si) => [si.id, si.number!]));
  if (fresh.length === 0) return new Map();
  const [row] = await query<{ next_number: number }>(scope.tx, sql`update projects set next_number = next_number + ${fresh.length} where id = ${scope.projectId} returning next_number`);
  const first = Number(row!.next_number) - fresh.length;
  return new Map(fresh.map((si, n) => [si.id, first + n]));
}

/** The page's labels: matched on source id, else on name (a label of the same name here is taken over), colour kept. */
async function applyLabels(scope: ApplyScope, page: SourceIssue[], links: Links, linkRows: LinkRow[]): Promise<Map<string, string>> {
  const { tx, orgId } = scope;
  const bySource = new Map<string, string>();
  const seen = [...new Map(page.flatMap((i) => i.labels).map((l) => [l.id, l])).values()];
  const unlinked = seen.filter((l) => !links.has(l.id));
  for (const l of seen) {
    const link = links.get(l.id);
    if (!link) continue;
    bySource.set(l.id, link.retascId);
    const hash = digest([l.name, l.color]);
    if (link.hash === hash) continue;
    await tx.update(labels).set({ name: l.name, color: l.color }).where(and(eq(labels.id, link.retascId), eq(labels.orgId, orgId)));
    linkRows.push({ orgId, linearId: l.id, kind: "label", retascId: link.retascId, hash });
  }
  if (unlinked.length === 0) return bySource;
  const byName = new Map(unlinked.map((l) => [l.name, l]));
  await tx
    .insert(labels)
    .values([...byName.values()].map((l) => ({ id: newId(), orgId, name: l.name, color: l.color })))
    .onConflictDoNothing();
  const rows = await tx.select({ id: labels.id, name: labels.name }).from(labels).where(and(eq(labels.orgId, orgId), inArray(labels.name, [...byName.keys()])));
  const idOfName = new Map(rows.map((r) => [r.name, r.id]));
  await tx.execute(sql`update labels set color = v.color from (values ${sql.join(
    [...byName.values()].map((l) => sql`(${idOfName.get(l.name)!}, ${l.color})`),
    sql`, `,
  )}) as v(id, color) where labels.id = v.id and labels.color <> v.color`);
  for (const l of unlinked) {
    const retascId = idOfName.get(l.name)!;
    const hash = digest([l.name, l.color]);
    linkRows.push({ orgId, linearId: l.id, kind: "label", retascId, hash });
    links.set(l.id, { retascId, hash });
    bySource.set(l.id, retascId);
  }
  return bySource;
}

/**
 * Comments and attachments already on this page's issues that no link names: an org restored
 * from an export keeps its issues' links but not their children's. They are matched on (issue,
 * created time, `${source}-import` runtime), so a re-import updates them instead of adding a copy.
 */
async function restoredChildren(scope: ApplyScope, page: SourceIssue[], links: Links): Promise<Restored> {
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
type Restored = Map<string, string[]>;
const restoredKey = (kind: string, issueId: string, createdAt: string) => `${kind}|${issueId}|${new Date(createdAt).toISOString()}`;
const takeRestored = (restored: Restored, kind: string, issueId: string, createdAt: string) => restored.get(restoredKey(kind, issueId, createdAt))?.shift();

/** Threaded comments, replies pointing at their parents; a comment archived at the source is retracted here. */
async function applyComments(scope: ApplyScope, page: SourceIssue[], issueIds: Map<string, string>, links: Links, restored: Restored, inlineFiles: Map<string, Map<string, string>>, linkRows: LinkRow[]) {
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
type AttachmentIds = Map<string, { id: string; known: boolean }>;
function planAttachments(page: SourceIssue[], links: Links, restored: Restored): AttachmentIds {
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
function inlineFilePaths(page: SourceIssue[], planned: AttachmentIds): Map<string, Map<string, string>> {
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
async function applyAttachments(scope: ApplyScope, page: SourceIssue[], issueIds: Map<string, string>, links: Links, planned: AttachmentIds, linkRows: LinkRow[], counts: ApplyCounts) {
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
