import { and, eq, inArray, sql } from "drizzle-orm";
import { query } from "../../../db/client.ts";
import { activity, issueLabels, issues, labels } from "../../../db/schema/index.ts";
import { endOfDayIn, rankingColumns, reviewClockOf, reviewSinceAfter, type ReviewClockState } from "../../issues/levels.ts";
import { indexTerms, type TermsEntry } from "../../issues/similar.ts";
import { isTerminal } from "../../issues/store.ts";
import { newId } from "../../orgs/index.ts";
import { applyAttachments, applyComments, inlineFilePaths, planAttachments, restoredChildren } from "./apply-children.ts";
import { date, digest, inChunks, linksAndGhostsOf, noCounts, upsertById, writeLinks, type ApplyCounts, type ApplyScope, type LinkRow, type Links } from "./apply-rows.ts";
import { insertJson } from "./json-rows.ts";
import { pointAtFiles } from "./inline-files.ts";
import type { SourceIssue } from "./stream.ts";

/**
 * Applies one staged page of any source, in the page's one transaction, with multi-row
 * statements (decision 047): every issue, label, comment and attachment in it is created,
 * updated in place or left alone, matched on its source id (linear_links, which holds every
 * source's links). An item whose imported fields hash as last written is not touched at all: no
 * write, no activity. Parents and relations name issues of later pages, so they are set once
 * every page is in (./link.ts).
 */
export async function applyPage(scope: ApplyScope, page: SourceIssue[]): Promise<ApplyCounts> {
  const { tx, cipher, orgId } = scope;
  const counts = noCounts();
  const ids = page.flatMap((i) => [i.id, ...i.labels.map((l) => l.id), ...i.comments.map((c) => c.id), ...i.attachments.map((a) => a.id)]);
  const people = page.flatMap((i) => [i.creator, i.assignee, ...i.comments.map((c) => c.author), ...i.attachments.map((a) => a.author)]);
  // The page's links and its people's placeholders in one statement; only people new to the org are made.
  const { links, ghosts } = await linksAndGhostsOf(tx, orgId, [...new Set(ids)], scope.source, scope.ghosts.unknown(people));
  scope.ghosts.attribute(ghosts);
  await scope.ghosts.resolve(people, true);
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
      for (const labelId of labelSet) labelRows.push({ orgId, issueId, labelId });
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
        for (const labelId of labelSet) labelRows.push({ orgId, issueId, labelId });
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

