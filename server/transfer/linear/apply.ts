import { and, eq, inArray } from "drizzle-orm";
import type { Db } from "../../../db/client.ts";
import { activity, attachments, comments, issueLabels, issues, labels, linearLinks, type IssueStatus } from "../../../db/schema/index.ts";
import { sha256, type OrgCipher } from "../../crypto/index.ts";
import { endOfDayIn, rankingColumns } from "../../issues/levels.ts";
import { isTerminal } from "../../issues/store.ts";
import { newId } from "../../orgs/index.ts";
import type { LinearIssue } from "./fetch.ts";
import type { GhostBook } from "./ghosts.ts";

/**
 * Applies one staged page: every issue, label, comment and link attachment in it is created,
 * updated in place or left alone, matched on its Linear id (linear_links). An item whose
 * imported fields hash as last written is not touched at all: no write, no activity. Parents
 * and relations name issues of later pages, so they are set once every page is in (./link.ts).
 */
export interface ApplyScope {
  tx: Db;
  cipher: OrgCipher;
  orgId: string;
  projectId: string;
  teamKey: string;
  timeZone: string;
  ghosts: GhostBook;
  now: Date;
}

export interface ApplyCounts {
  created: number;
  updated: number;
  unchanged: number;
  comments: number;
}

/** Linear's state types as Retasc statuses. A started issue is `doing` with no lease: available work, as DESIGN has an unheld doing. */
export function statusOf(stateType: string): IssueStatus {
  if (stateType === "started") return "doing";
  if (stateType === "completed") return "done";
  if (stateType === "canceled") return "canceled";
  return "todo";
}

export const digest = (value: unknown) => sha256(JSON.stringify(value));
const date = (iso: string | null) => (iso ? new Date(iso) : null);
export type Links = Map<string, { retascId: string; hash: string }>;

export async function linksOf(tx: Db, orgId: string, ids: string[]): Promise<Links> {
  const links: Links = new Map();
  for (let at = 0; at < ids.length; at += 1000) {
    const rows = await tx
      .select({ linearId: linearLinks.linearId, retascId: linearLinks.retascId, hash: linearLinks.hash })
      .from(linearLinks)
      .where(and(eq(linearLinks.orgId, orgId), inArray(linearLinks.linearId, ids.slice(at, at + 1000))));
    for (const r of rows) links.set(r.linearId, r);
  }
  return links;
}

export async function setLink(tx: Db, orgId: string, linearId: string, kind: (typeof linearLinks.$inferInsert)["kind"], retascId: string, hash: string, estimate: number | null = null) {
  await tx
    .insert(linearLinks)
    .values({ orgId, linearId, kind, retascId, hash, estimate })
    .onConflictDoUpdate({ target: [linearLinks.orgId, linearLinks.linearId], set: { hash, estimate } });
}

export async function applyPage(scope: ApplyScope, page: LinearIssue[]): Promise<ApplyCounts> {
  const { tx, cipher, orgId } = scope;
  const counts: ApplyCounts = { created: 0, updated: 0, unchanged: 0, comments: 0 };
  const ids = page.flatMap((i) => [i.id, ...i.labels.map((l) => l.id), ...i.comments.map((c) => c.id), ...i.attachments.map((a) => a.id)]);
  const links = await linksOf(tx, orgId, [...new Set(ids)]);
  const labelIds = await applyLabels(scope, page, links);
  const history: (typeof activity.$inferInsert)[] = [];
  for (const li of page) {
    const status = statusOf(li.stateType);
    const authorId = await scope.ghosts.userFor(li.creator);
    const assigneeId = await scope.ghosts.userFor(li.assignee);
    const labelSet = [...new Set(li.labels.map((l) => labelIds.get(l.id)!))].sort();
    const fields = {
      title: li.title,
      description: li.description,
      status,
      priority: li.priority,
      estimate: li.estimate,
      dueDate: li.dueDate,
      times: [li.createdAt, li.updatedAt, li.startedAt, li.completedAt, li.canceledAt],
      // People by their Linear ids: a claim re-attributes them here without making the issue "changed".
      creator: li.creator?.id ?? null,
      assignee: li.assignee?.id ?? null,
      labels: li.labels.map((l) => l.id).sort(),
    };
    const hash = digest(fields);
    const link = links.get(li.id);
    const dueAt = li.dueDate ? endOfDayIn(li.dueDate, scope.timeZone) : null;
    const dueSetAt = dueAt ? new Date(li.createdAt) : null;
    const terminal = isTerminal(status);
    const ranking = rankingColumns(Math.round(li.priority), dueAt, dueSetAt, terminal, scope.now);
    const columns = {
      titleEnc: cipher.encrypt(li.title),
      bodyEnc: cipher.encrypt(li.description),
      status,
      priority: Math.round(li.priority),
      assigneeId,
      authorId,
      dueAt,
      dueSetAt,
      ...ranking,
      effectiveLevel: ranking.ownLevel,
      effectiveDueAt: terminal ? null : dueAt,
      firstClaimedAt: date(li.startedAt),
      createdAt: new Date(li.createdAt),
      updatedAt: new Date(li.updatedAt),
    };
    let issueId: string;
    if (!link) {
      issueId = newId();
      await tx.insert(issues).values({
        id: issueId,
        orgId,
        projectId: scope.projectId,
        number: li.number,
        identifier: `${scope.teamKey}-${li.number}`,
        work: true,
        ...columns,
      });
      if (labelSet.length > 0) await tx.insert(issueLabels).values(labelSet.map((labelId) => ({ issueId, labelId })));
      const at = (kind: string, when: string | null, actorId: string | null) => {
        if (when) history.push({ orgId, issueId, kind, actorId, runtime: "linear-import", facts: { source: "linear", status: kind === "created" ? "todo" : status }, createdAt: new Date(when) });
      };
      at("created", li.createdAt, authorId);
      at("started", li.startedAt, assigneeId);
      at("done", li.completedAt, assigneeId);
      at("canceled", li.canceledAt, assigneeId);
      counts.created++;
    } else {
      issueId = link.retascId;
      if (link.hash !== hash) {
        await tx.update(issues).set(columns).where(and(eq(issues.id, issueId), eq(issues.orgId, orgId)));
        await tx.delete(issueLabels).where(eq(issueLabels.issueId, issueId));
        if (labelSet.length > 0) await tx.insert(issueLabels).values(labelSet.map((labelId) => ({ issueId, labelId })));
        history.push({ orgId, issueId, kind: "updated", actorId: null, runtime: "linear-import", facts: { source: "linear", status }, createdAt: new Date(li.updatedAt) });
        counts.updated++;
      } else counts.unchanged++;
    }
    if (!link || link.hash !== hash) await setLink(tx, orgId, li.id, "issue", issueId, hash, li.estimate);
    counts.comments += await applyComments(scope, li, issueId, links);
    await applyAttachments(scope, li, issueId, links);
  }
  for (let at = 0; at < history.length; at += 500) await tx.insert(activity).values(history.slice(at, at + 500));
  return counts;
}

/** The page's labels: matched on Linear id, else on name (a label of the same name here is taken over), colour kept. */
async function applyLabels(scope: ApplyScope, page: LinearIssue[], links: Links): Promise<Map<string, string>> {
  const { tx, orgId } = scope;
  const byLinear = new Map<string, string>();
  const seen = new Map(page.flatMap((i) => i.labels).map((l) => [l.id, l]));
  for (const l of seen.values()) {
    const hash = digest([l.name, l.color]);
    const link = links.get(l.id);
    if (link) {
      byLinear.set(l.id, link.retascId);
      if (link.hash !== hash) {
        await tx.update(labels).set({ name: l.name, color: l.color }).where(and(eq(labels.id, link.retascId), eq(labels.orgId, orgId)));
        await setLink(tx, orgId, l.id, "label", link.retascId, hash);
      }
      continue;
    }
    await tx.insert(labels).values({ id: newId(), orgId, name: l.name, color: l.color }).onConflictDoNothing();
    const [row] = await tx.select({ id: labels.id }).from(labels).where(and(eq(labels.orgId, orgId), eq(labels.name, l.name)));
    await tx.update(labels).set({ color: l.color }).where(eq(labels.id, row!.id));
    await setLink(tx, orgId, l.id, "label", row!.id, hash);
    links.set(l.id, { retascId: row!.id, hash });
    byLinear.set(l.id, row!.id);
  }
  return byLinear;
}

/** Threaded comments, replies pointing at their parents; a comment archived in Linear is retracted here. */
async function applyComments(scope: ApplyScope, li: LinearIssue, issueId: string, links: Links): Promise<number> {
  const { tx, cipher, orgId } = scope;
  const idOf = new Map<string, string>();
  for (const c of li.comments) idOf.set(c.id, links.get(c.id)?.retascId ?? newId());
  const inserts: (typeof comments.$inferInsert)[] = [];
  for (const c of li.comments) {
    const authorId = await scope.ghosts.userFor(c.user);
    const hash = digest([c.body, c.createdAt, c.archivedAt, c.parentId, c.user?.id ?? null]);
    const link = links.get(c.id);
    if (link?.hash === hash) continue;
    const row = {
      parentId: c.parentId ? (idOf.get(c.parentId) ?? null) : null,
      authorId,
      runtime: "linear-import",
      bodyEnc: cipher.encrypt(c.body),
      retractedAt: date(c.archivedAt),
      createdAt: new Date(c.createdAt),
    };
    if (link) await tx.update(comments).set(row).where(and(eq(comments.id, link.retascId), eq(comments.orgId, orgId)));
    else inserts.push({ id: idOf.get(c.id)!, orgId, issueId, ...row });
    await setLink(tx, orgId, c.id, "comment", idOf.get(c.id)!, hash);
  }
  for (let at = 0; at < inserts.length; at += 200) await tx.insert(comments).values(inserts.slice(at, at + 200));
  return li.comments.length;
}

async function applyAttachments(scope: ApplyScope, li: LinearIssue, issueId: string, links: Links): Promise<void> {
  const { tx, cipher, orgId } = scope;
  for (const a of li.attachments) {
    const authorId = await scope.ghosts.userFor(a.creator);
    const hash = digest([a.title, a.url, a.createdAt, a.creator?.id ?? null]);
    const link = links.get(a.id);
    if (link?.hash === hash) continue;
    const row = { urlEnc: cipher.encrypt(a.url), titleEnc: cipher.encrypt(a.title), authorId, createdAt: new Date(a.createdAt) };
    const id = link?.retascId ?? newId();
    if (link) await tx.update(attachments).set(row).where(and(eq(attachments.id, id), eq(attachments.orgId, orgId)));
    else await tx.insert(attachments).values({ id, orgId, issueId, ...row });
    await setLink(tx, orgId, a.id, "attachment", id, hash);
  }
}

/** Linear's relation types as Retasc's: `similar` (Linear's suggestion) is kept as related. */
export function relationTypeOf(type: string): "blocks" | "related" | "duplicate" {
  return type === "blocks" ? "blocks" : type === "duplicate" ? "duplicate" : "related";
}
