import { eq, inArray, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { issueLabels, issues, labels, leases, relations, user } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { branchName, slaOf } from "./levels.ts";
import { isTerminal, latestCheckpoint, type IssueRow } from "./store.ts";

/** What reads return: plain JSON with ISO dates, content decrypted. */
const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export interface PersonRef {
  userId: string;
  email: string;
  name: string;
}

export function checkpointView(cipher: OrgCipher, row: Awaited<ReturnType<typeof latestCheckpoint>>) {
  if (!row) return null;
  return {
    done: cipher.decrypt(row.doneEnc),
    next: cipher.decrypt(row.nextEnc),
    gotchas: cipher.decrypt(row.gotchasEnc),
    note: cipher.decrypt(row.noteEnc),
    branch: row.branch,
    runtime: row.runtime,
    userId: row.userId,
    createdAt: row.createdAt.toISOString(),
  };
}
export type CheckpointView = ReturnType<typeof checkpointView>;

export function slaView(row: IssueRow, now: Date) {
  if (isTerminal(row.status)) return { slaState: "none" as const, timeRemainingMs: null };
  const sla = slaOf(row.dueAt, row.dueSetAt ?? row.createdAt, now);
  return { slaState: sla.state, timeRemainingMs: sla.remainingMs };
}

export function isLeaseLive(row: Pick<IssueRow, "leaseId" | "leaseExpiresAt">, now: Date): boolean {
  return row.leaseId !== null && row.leaseExpiresAt !== null && row.leaseExpiresAt.getTime() > now.getTime();
}

async function people(db: Db, ids: (string | null)[]): Promise<Map<string, PersonRef>> {
  const wanted = [...new Set(ids.filter((id): id is string => Boolean(id)))];
  if (wanted.length === 0) return new Map();
  const rows = await db.select({ userId: user.id, email: user.email, name: user.name }).from(user).where(inArray(user.id, wanted));
  return new Map(rows.map((r) => [r.userId, r]));
}

/** A compact line for lists. */
export async function summarize(db: Db, cipher: OrgCipher, rows: IssueRow[], now: Date) {
  const who = await people(db, rows.map((r) => r.assigneeId));
  return rows.map((row) => ({
    identifier: row.identifier,
    title: cipher.decrypt(row.titleEnc),
    work: row.work,
    status: row.status,
    priority: row.priority,
    effectiveLevel: row.effectiveLevel,
    assignee: row.assigneeId ? (who.get(row.assigneeId) ?? null) : null,
    dueAt: iso(row.dueAt),
    ...slaView(row, now),
    held: isLeaseLive(row, now),
    leaseExpiresAt: isLeaseLive(row, now) ? iso(row.leaseExpiresAt) : null,
    updatedAt: row.updatedAt.toISOString(),
  }));
}
export type IssueSummary = Awaited<ReturnType<typeof summarize>>[number];

/** What an issue view reads besides the row: only the row's references are needed to start. */
export type IssueRefs = Pick<IssueRow, "id" | "parentId" | "leaseId" | "leaseExpiresAt" | "assigneeId" | "authorId">;

/**
 * Every read of an issue view, sent together (one round trip inside a transaction). The
 * lease's holder comes with the lease, so nothing waits on an earlier result.
 */
export async function issueViewReads(db: Db, row: IssueRefs, now: Date) {
  const [rels, labelRows, children, parent, checkpoint, lease, who] = await Promise.all([
    db
      .select({
        type: relations.type,
        sourceId: relations.sourceId,
        targetId: relations.targetId,
        identifier: issues.identifier,
        status: issues.status,
      })
      .from(relations)
      .innerJoin(
        issues,
        sql`${issues.id} = case when ${relations.sourceId} = ${row.id} then ${relations.targetId} else ${relations.sourceId} end`,
      )
      .where(or(eq(relations.sourceId, row.id), eq(relations.targetId, row.id))),
    db
      .select({ name: labels.name })
      .from(issueLabels)
      .innerJoin(labels, eq(labels.id, issueLabels.labelId))
      .where(eq(issueLabels.issueId, row.id))
      .orderBy(labels.name),
    db.select({ identifier: issues.identifier }).from(issues).where(eq(issues.parentId, row.id)).orderBy(issues.number),
    row.parentId
      ? db.select({ identifier: issues.identifier }).from(issues).where(eq(issues.id, row.parentId))
      : Promise.resolve([]),
    latestCheckpoint(db, row.id),
    isLeaseLive(row, now)
      ? db
          .select({ lease: leases, holder: { userId: user.id, email: user.email, name: user.name } })
          .from(leases)
          .leftJoin(user, eq(user.id, leases.userId))
          .where(eq(leases.id, row.leaseId!))
      : Promise.resolve([]),
    people(db, [row.assigneeId, row.authorId]),
  ]);
  return { rels, labelRows, children, parent, checkpoint, lease: lease[0], who };
}

/** The full issue: content, relations, computed blocking, deadline state, lease, latest checkpoint. */
export async function issueView(db: Db, cipher: OrgCipher, row: IssueRow, now: Date) {
  return renderIssueView(cipher, row, await issueViewReads(db, row, now), now);
}

/** Builds the view from the row and what `issueViewReads` returned for it. */
export function renderIssueView(cipher: OrgCipher, row: IssueRow, reads: Awaited<ReturnType<typeof issueViewReads>>, now: Date) {
  const { rels, labelRows, children, parent, checkpoint, who } = reads;
  const blockedBy = rels.filter((r) => r.type === "blocks" && r.targetId === row.id);
  const blocks = rels.filter((r) => r.type === "blocks" && r.sourceId === row.id);
  const title = cipher.decrypt(row.titleEnc);
  const checkpointData = checkpointView(cipher, checkpoint);
  const holder = reads.lease?.lease;
  return {
    identifier: row.identifier,
    title,
    body: cipher.decrypt(row.bodyEnc),
    work: row.work,
    status: row.status,
    priority: row.priority,
    assignee: row.assigneeId ? (who.get(row.assigneeId) ?? null) : null,
    author: row.authorId ? (who.get(row.authorId) ?? null) : null,
    parent: parent[0]?.identifier ?? null,
    children: children.map((c) => c.identifier),
    labels: labelRows.map((l) => l.name),
    dueAt: iso(row.dueAt),
    ...slaView(row, now),
    ownLevel: row.ownLevel,
    effectiveLevel: row.effectiveLevel,
    effectiveDueAt: iso(row.effectiveDueAt),
    blockedBy: blockedBy.map((r) => ({ identifier: r.identifier, status: r.status })),
    blocks: blocks.map((r) => ({ identifier: r.identifier, status: r.status })),
    openBlockers: blockedBy.filter((r) => !isTerminal(r.status)).map((r) => r.identifier),
    related: rels.filter((r) => r.type === "related").map((r) => r.identifier),
    duplicates: rels.filter((r) => r.type === "duplicate").map((r) => r.identifier),
    lease: holder
      ? {
          holder: reads.lease?.holder ?? null,
          holderUserId: holder.userId,
          runtime: holder.runtime,
          keyId: holder.keyId,
          expiresAt: holder.expiresAt.toISOString(),
          fence: holder.fence,
        }
      : null,
    fence: row.fence,
    checkpoint: checkpointData,
    branch: checkpointData?.branch ?? branchName(row.identifier, title),
    noDependency: cipher.decrypt(row.noDependencyEnc),
    cancelReason: cipher.decrypt(row.cancelReasonEnc),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
export type IssueView = Awaited<ReturnType<typeof issueView>>;
