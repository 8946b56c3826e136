import { and, eq, inArray } from "drizzle-orm";
import { importGhosts, type IssueStatus } from "../../../db/schema/index.ts";
import type { Ctx } from "../../context.ts";
import { inChunks, linksOf } from "./apply-rows.ts";
import { MAX_FILE_BYTES } from "../../issues/attachments-files.ts";
import type { LinkReason } from "./files.ts";
import type { SourceIssue, SourceReader } from "./stream.ts";

/**
 * What a run would do, read but not written (`dryRun: true` on any source's start): the counts,
 * how the source's statuses and priorities map to ours, the people who would become placeholders,
 * how many items are already here from an earlier import, and what stays behind. The source is
 * read whole, as the run would read it; nothing is staged or stored.
 */
export interface DryRunReport {
  dryRun: true;
  source: string;
  counts: { issues: number; containers: number; comments: number; attachments: number; filesCopied: number; linksKept: number; relations: number; labels: number };
  /** Why attachments would stay links: `link` (a link at the source, or on another host than the source's), `tooLarge` (the source gives a size over the limit). A download that fails is known only when the run makes it. */
  linkReasons: Partial<Record<LinkReason, number>>;
  /** Items an earlier import of this source already brought: a run updates or leaves them. */
  known: { issues: number; comments: number };
  /** The source's status (or priority) name → ours, with how many issues carry it. */
  statuses: { from: string; to: IssueStatus; issues: number }[];
  priorities: { from: string; to: number; issues: number }[];
  /** People named who have no placeholder here yet: the run makes one each, claimable by their verified email. */
  ghosts: { name: string; email: string | null }[];
  /** What the run does not bring, in words. */
  leftBehind: string[];
}

export async function dryRun(ctx: Ctx, reader: SourceReader, notes: string[] = []): Promise<DryRunReport> {
  const all: SourceIssue[] = [];
  for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
    const page = await reader.readPage(cursor);
    all.push(...page.issues);
    cursor = page.next;
  }
  const orgId = ctx.principal.orgId;
  const ids = new Set(all.map((i) => i.id));
  const parents = new Set(all.map((i) => i.parentId).filter((p): p is string => p !== null && ids.has(p)));
  const outside = all.flatMap((i) => i.relations).filter((r) => !ids.has(r.targetId)).length;
  const orphanParents = all.filter((i) => i.parentId && !ids.has(i.parentId)).length;
  const tally = <K extends string | number>(pick: (i: SourceIssue) => [string, K]) => {
    const seen = new Map<string, { from: string; to: K; issues: number }>();
    for (const i of all) {
      const [from, to] = pick(i);
      const entry = seen.get(`${from}\u0000${to}`) ?? { from, to, issues: 0 };
      entry.issues++;
      seen.set(`${from}\u0000${to}`, entry);
    }
    return [...seen.values()].sort((a, b) => b.issues - a.issues);
  };
  const links = await linksOf(ctx.db, orgId, [...ids, ...all.flatMap((i) => i.comments.map((c) => c.id))]);
  const people = new Map(all.flatMap((i) => [i.creator, i.assignee, ...i.comments.map((c) => c.author), ...i.attachments.map((a) => a.author)]).filter((p) => p !== null).map((p) => [p!.id, p!]));
  const ghosted = new Set<string>();
  await inChunks([...people.keys()], async (chunk) => {
    const rows = await ctx.db.select({ id: importGhosts.sourceUserId }).from(importGhosts).where(and(eq(importGhosts.orgId, orgId), eq(importGhosts.source, reader.source), inArray(importGhosts.sourceUserId, chunk)));
    for (const r of rows) ghosted.add(r.id);
  });
  const attachments = all.flatMap((i) => i.attachments);
  const linkReasons: Partial<Record<LinkReason, number>> = {};
  for (const a of attachments) {
    const reason = !a.file || !reader.fetchFile ? "link" : a.file.size !== null && a.file.size > MAX_FILE_BYTES ? "tooLarge" : null;
    if (reason) linkReasons[reason] = (linkReasons[reason] ?? 0) + 1;
  }
  const linksKept = (linkReasons.link ?? 0) + (linkReasons.tooLarge ?? 0);
  return {
    dryRun: true,
    source: reader.source,
    counts: {
      issues: all.length,
      containers: parents.size,
      comments: all.reduce((n, i) => n + i.comments.length, 0),
      attachments: attachments.length,
      filesCopied: attachments.length - linksKept,
      linksKept,
      relations: all.reduce((n, i) => n + i.relations.length, 0) - outside,
      labels: new Set(all.flatMap((i) => i.labels.map((l) => l.name))).size,
    },
    known: { issues: all.filter((i) => links.has(i.id)).length, comments: all.flatMap((i) => i.comments).filter((c) => links.has(c.id)).length },
    statuses: tally((i) => [i.sourceStatus ?? i.status, i.status]),
    priorities: tally((i) => [i.sourcePriority ?? String(i.priority), i.priority]),
    linkReasons,
    ghosts: [...people.values()].filter((p) => !ghosted.has(p.id)).map((p) => ({ name: p.name, email: p.email })),
    leftBehind: [
      ...(outside > 0 ? [`${outside} relation(s) to issues outside this import`] : []),
      ...(orphanParents > 0 ? [`${orphanParents} parent link(s) to issues outside this import (those issues come without a parent)`] : []),
      ...(linkReasons.tooLarge ? [`${linkReasons.tooLarge} attachment file(s) over the ${MAX_FILE_BYTES / 1024 / 1024} MiB attachment limit come as links to the source`] : []),
      ...notes,
    ],
  };
}
