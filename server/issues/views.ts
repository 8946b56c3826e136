import { and, eq, inArray, sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { DISPATCH_STATUSES } from "../../db/schema/dispatch.ts";
import { issues, user, type checkpoints, type relations } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { issueBranch, slaOf } from "./levels.ts";
import { quarantineOf } from "./quarantine.ts";
import { verificationNow } from "./verification-state.ts";
import { isLeaseLive } from "./fencing.ts";
import { isTerminal } from "./store.ts";
import type { IssueRow } from "./types.ts";
import { reaches, type Reach } from "../orgs/scope.ts";

/** What reads return: plain JSON with ISO dates, content decrypted. */
const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export interface PersonRef {
  userId: string;
  email: string;
  name: string;
}

/** The checkpoint columns a view shows. */
type CheckpointRow = Pick<
  typeof checkpoints.$inferSelect,
  "doneEnc" | "nextEnc" | "gotchasEnc" | "noteEnc" | "branch" | "runtime" | "userId" | "createdAt"
>;

export function checkpointView(cipher: OrgCipher, row: CheckpointRow | null) {
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

/**
 * How an issue nobody holds reads: what its next claim does. "Resumes" only where someone held
 * it before (the fence rises with every claim, so a fence above 0 means a previous lease).
 */
export function unheldText(row: Pick<IssueRow, "status" | "fence">): string {
  if (!(DISPATCH_STATUSES as readonly string[]).includes(row.status)) return `${row.status}, unheld: not dispatched while ${row.status}`;
  return `${row.status}, unheld: the next claim ${row.fence > 0 ? "resumes" : "starts"} it`;
}


/** The evidence the last finish carried, or null. */
export function evidenceOf(row: Pick<IssueRow, "evidenceCommit" | "evidenceBranch" | "evidencePr">) {
  if (!row.evidenceCommit && !row.evidenceBranch && !row.evidencePr) return null;
  return { commit: row.evidenceCommit, branch: row.evidenceBranch, pr: row.evidencePr };
}

/** What reads say of a `doing` issue nobody holds (the status alone reads as "someone is on it"); null otherwise. */
export function statusNoteOf(row: Pick<IssueRow, "status" | "fence">, held: boolean): string | null {
  return row.status === "doing" && !held ? unheldText(row) : null;
}

/** Whether the live claim took the issue over from a previous holder (an earlier lease exists). */
export function resumedClaim(row: Pick<IssueRow, "fence" | "leaseId" | "leaseExpiresAt">, now: Date): boolean {
  return isLeaseLive(row, now) && row.fence > 1;
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
    ...(row.triage ? { triage: row.triage } : {}),
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

type RelationRef = Pick<typeof relations.$inferSelect, "type" | "sourceId" | "targetId"> & Pick<IssueRow, "identifier" | "status" | "projectId">;
/** A parent or child: its identifier and project. */
type IssueRef = Pick<IssueRow, "identifier" | "projectId">;

/** What retasc_view_reads returns (db/migrations/0035_project_scope_relations_and_samples.sql; naming the org, 0070): JSON carries timestamps as strings. */
export interface ViewReadsJson {
  rels: RelationRef[];
  labels: string[];
  children: IssueRef[];
  parent: IssueRef | null;
  checkpoint: (Omit<CheckpointRow, "createdAt"> & { createdAt: string }) | null;
  lease: { userId: string; runtime: string; keyId: string | null; fence: number; expiresAt: string; holder: PersonRef | null } | null;
  people: PersonRef[];
}

/**
 * The view's reads with Dates, from their JSON, as `reach` sees them (decision 042): a related
 * issue, parent or child outside the caller's projects is left out, as if it did not exist. Only
 * the number of open blockers so left out stays, since they still hold the issue back.
 */
export function viewReadsFrom(reads: ViewReadsJson, issueId: string, reach: Pick<Reach, "projectIds">) {
  const { checkpoint, lease } = reads;
  const seen = (ref: IssueRef) => reaches(reach, ref.projectId);
  return {
    rels: reads.rels.filter(seen),
    outsideOpenBlockers: reads.rels.filter((r) => !seen(r) && r.type === "blocks" && r.targetId === issueId && !isTerminal(r.status)).length,
    labels: reads.labels,
    children: reads.children.filter(seen).map((c) => c.identifier),
    parent: reads.parent && seen(reads.parent) ? reads.parent.identifier : null,
    checkpoint: checkpoint && { ...checkpoint, createdAt: new Date(checkpoint.createdAt) },
    lease: lease && { ...lease, expiresAt: new Date(lease.expiresAt) },
    who: new Map(reads.people.map((p) => [p.userId, p])),
  };
}
export type ViewReads = ReturnType<typeof viewReadsFrom> & {
  /** Blockers that are done but whose CI verification is pending: they still block (decision 045). */
  pendingBlockers?: ReadonlySet<string>;
};

/** What a view says of open blockers outside the caller's projects, which it does not name; null when none. */
export const outsideBlockersText = (n: number) => (n > 0 ? `waits on ${n} open issue${n === 1 ? "" : "s"} outside your projects` : null);

/**
 * Every read of an issue view (relations, labels, children, parent, latest checkpoint, live
 * lease, people) in one statement: a claim or a finish replies with the view, and one
 * statement instead of seven is much of their cost.
 */
export async function issueViewReads(db: Db, reach: Pick<Reach, "projectIds">, issueId: string, now: Date, orgId: string): Promise<ViewReads> {
  const [row] = await query<{ reads: ViewReadsJson }>(db, sql`select retasc_view_reads(${issueId}, ${now.toISOString()}::timestamptz, ${orgId}::text) as reads`);
  const reads: ViewReads = viewReadsFrom(row!.reads, issueId, reach);
  // A done blocker still blocks while CI has not passed it; read only when one is done. The
  // claim and finish replies (whose issue no pending finish can block) build their reads in SQL.
  const done = reads.rels.filter((r) => r.type === "blocks" && r.targetId === issueId && r.status === "done").map((r) => r.sourceId);
  if (done.length === 0) return reads;
  const pending = await db.select({ id: issues.id }).from(issues).where(and(eq(issues.orgId, orgId), inArray(issues.id, done), eq(issues.verification, "pending")));
  return pending.length === 0 ? reads : { ...reads, pendingBlockers: new Set(pending.map((p) => p.id)) };
}

/** The full issue: content, relations, computed blocking, deadline state, lease, latest checkpoint. */
export async function issueView(db: Db, reach: Pick<Reach, "projectIds">, cipher: OrgCipher, row: IssueRow, now: Date) {
  const view = renderIssueView(cipher, row, await issueViewReads(db, reach, row.id, now, row.orgId), now);
  // A quarantined issue (decision 055) shows why, and what the agents that abandoned it wrote.
  return row.quarantinedAt ? { ...view, quarantine: await quarantineOf(db, cipher, row) } : view;
}

/**
 * Builds the view from the row and what `issueViewReads` returned for it. A claim's and a finish's
 * rows come with only the columns this reads (retasc_view_row, db/migrations/0080): a column it
 * starts to read goes there too (view-row.test.ts).
 */
export function renderIssueView(cipher: OrgCipher, row: IssueRow, reads: ViewReads, now: Date) {
  const { rels, children, parent, checkpoint, who, lease } = reads;
  const blockedBy = rels.filter((r) => r.type === "blocks" && r.targetId === row.id);
  const blocks = rels.filter((r) => r.type === "blocks" && r.sourceId === row.id);
  const title = cipher.decrypt(row.titleEnc);
  const checkpointData = checkpointView(cipher, checkpoint);
  const statusNote = statusNoteOf(row, lease !== null);
  const verification = verificationNow(row, now);
  const evidence = evidenceOf(row);
  const blockedOutsideScope = outsideBlockersText(reads.outsideOpenBlockers);
  return {
    identifier: row.identifier,
    title,
    body: cipher.decrypt(row.bodyEnc),
    work: row.work,
    changeType: row.changeType,
    status: row.status,
    // Only intake's issues carry it: "pending" is an outsider's, not dispatched until accepted.
    ...(row.triage ? { triage: row.triage } : {}),
    priority: row.priority,
    assignee: row.assigneeId ? (who.get(row.assigneeId) ?? null) : null,
    author: row.authorId ? (who.get(row.authorId) ?? null) : null,
    parent,
    children,
    labels: reads.labels,
    dueAt: iso(row.dueAt),
    ...slaView(row, now),
    ownLevel: row.ownLevel,
    effectiveLevel: row.effectiveLevel,
    effectiveDueAt: iso(row.effectiveDueAt),
    blockedBy: blockedBy.map((r) => ({ identifier: r.identifier, status: r.status, ...(reads.pendingBlockers?.has(r.sourceId) ? { verification: "pending" as const } : {}) })),
    blocks: blocks.map((r) => ({ identifier: r.identifier, status: r.status })),
    openBlockers: blockedBy.filter((r) => !isTerminal(r.status) || reads.pendingBlockers?.has(r.sourceId)).map((r) => r.identifier),
    ...(blockedOutsideScope !== null ? { blockedOutsideScope } : {}),
    related: rels.filter((r) => r.type === "related").map((r) => r.identifier),
    duplicates: rels.filter((r) => r.type === "duplicate").map((r) => r.identifier),
    lease: lease
      ? {
          holder: lease.holder,
          holderUserId: lease.userId,
          runtime: lease.runtime,
          keyId: lease.keyId,
          expiresAt: lease.expiresAt.toISOString(),
          fence: lease.fence,
        }
      : null,
    held: lease !== null,
    ...(statusNote !== null ? { statusNote } : {}),
    ...(verification ? { verification } : {}),
    ...(evidence ? { evidence } : {}),
    fence: row.fence,
    checkpoint: checkpointData,
    branch: issueBranch(row.identifier, title, row.branch, checkpointData?.branch),
    noDependency: cipher.decrypt(row.noDependencyEnc),
    cancelReason: cipher.decrypt(row.cancelReasonEnc),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
export type IssueView = Awaited<ReturnType<typeof issueView>>;
