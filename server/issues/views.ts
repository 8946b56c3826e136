import { inArray, sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { user, type checkpoints, type relations } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { branchName, slaOf } from "./levels.ts";
import { isTerminal, type IssueRow } from "./store.ts";

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

type RelationRef = Pick<typeof relations.$inferSelect, "type" | "sourceId" | "targetId"> & Pick<IssueRow, "identifier" | "status">;

/** JSON carries timestamps as strings; the view's readers take Dates. */
interface ViewReadsRow {
  rels: RelationRef[];
  labels: string[];
  children: string[];
  parent: string | null;
  checkpoint: (Omit<CheckpointRow, "createdAt"> & { createdAt: string }) | null;
  lease: { userId: string; runtime: string; keyId: string | null; fence: number; expiresAt: string; holder: PersonRef | null } | null;
  people: PersonRef[];
}

/**
 * Every read of an issue view in one statement, each part a JSON subquery: a claim or a
 * finish replies with the view, and one statement instead of seven is much of their cost
 * (building, sending and parsing each). The lease is read only while live, as before.
 */
export async function issueViewReads(db: Db, row: IssueRefs, now: Date) {
  const liveLeaseId = isLeaseLive(row, now) ? row.leaseId : null;
  const [reads] = await query<ViewReadsRow>(
    db,
    sql`select
      (select coalesce(json_agg(json_build_object('type', r.type, 'sourceId', r.source_id, 'targetId', r.target_id,
                                                  'identifier', o.identifier, 'status', o.status)), '[]')
         from relations r join issues o on o.id = case when r.source_id = ${row.id} then r.target_id else r.source_id end
         where r.source_id = ${row.id} or r.target_id = ${row.id}) as rels,
      (select coalesce(json_agg(l.name order by l.name), '[]')
         from issue_labels il join labels l on l.id = il.label_id where il.issue_id = ${row.id}) as labels,
      (select coalesce(json_agg(c.identifier order by c.number), '[]') from issues c where c.parent_id = ${row.id}) as children,
      (select p.identifier from issues p where p.id = ${row.parentId}) as parent,
      (select json_build_object('doneEnc', cp.done_enc, 'nextEnc', cp.next_enc, 'gotchasEnc', cp.gotchas_enc, 'noteEnc', cp.note_enc,
                                'branch', cp.branch, 'runtime', cp.runtime, 'userId', cp.user_id, 'createdAt', cp.created_at)
         from checkpoints cp where cp.issue_id = ${row.id} order by cp.created_at desc, cp.id desc limit 1) as checkpoint,
      (select json_build_object('userId', l.user_id, 'runtime', l.runtime, 'keyId', l.key_id, 'fence', l.fence, 'expiresAt', l.expires_at,
                                'holder', case when u.id is null then null else json_build_object('userId', u.id, 'email', u.email, 'name', u.name) end)
         from leases l left join "user" u on u.id = l.user_id where l.id = ${liveLeaseId}) as lease,
      (select coalesce(json_agg(json_build_object('userId', u.id, 'email', u.email, 'name', u.name)), '[]')
         from "user" u where u.id in (${row.assigneeId}, ${row.authorId})) as people`,
  );
  const { checkpoint, lease } = reads!;
  return {
    rels: reads!.rels,
    labels: reads!.labels,
    children: reads!.children,
    parent: reads!.parent,
    checkpoint: checkpoint && { ...checkpoint, createdAt: new Date(checkpoint.createdAt) },
    lease: lease && { ...lease, expiresAt: new Date(lease.expiresAt) },
    who: new Map(reads!.people.map((p) => [p.userId, p])),
  };
}

/** The full issue: content, relations, computed blocking, deadline state, lease, latest checkpoint. */
export async function issueView(db: Db, cipher: OrgCipher, row: IssueRow, now: Date) {
  return renderIssueView(cipher, row, await issueViewReads(db, row, now), now);
}

/** Builds the view from the row and what `issueViewReads` returned for it. */
export function renderIssueView(cipher: OrgCipher, row: IssueRow, reads: Awaited<ReturnType<typeof issueViewReads>>, now: Date) {
  const { rels, children, parent, checkpoint, who, lease } = reads;
  const blockedBy = rels.filter((r) => r.type === "blocks" && r.targetId === row.id);
  const blocks = rels.filter((r) => r.type === "blocks" && r.sourceId === row.id);
  const title = cipher.decrypt(row.titleEnc);
  const checkpointData = checkpointView(cipher, checkpoint);
  return {
    identifier: row.identifier,
    title,
    body: cipher.decrypt(row.bodyEnc),
    work: row.work,
    status: row.status,
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
    blockedBy: blockedBy.map((r) => ({ identifier: r.identifier, status: r.status })),
    blocks: blocks.map((r) => ({ identifier: r.identifier, status: r.status })),
    openBlockers: blockedBy.filter((r) => !isTerminal(r.status)).map((r) => r.identifier),
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
