import { and, desc, eq, getTableColumns, or, sql } from "drizzle-orm";
import { pgArray, query, type Db } from "../../db/client.ts";
import { retryingConflicts } from "../../db/retry.ts";
import { checkpoints, issues, members, orgs, projects, relations, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { DomainError, invalidInput, notFound } from "../errors.ts";
import { settleCharge, type MeterScope } from "../usage/meter.ts";
import { transactionWithNotices } from "../events/index.ts";
import { countIfStale } from "./stale-refusals.ts";
import { endOfDayIn } from "./levels.ts";
import { gatesDependents, isOpen } from "../../db/schema/dispatch.ts";
import { projectReach, reachable, reaches, type Reach } from "../orgs/scope.ts";
import { projectNamedBy } from "../orgs/index.ts";
import type { IssueRow } from "./types.ts";

/** Shared plumbing of issue writes: transactions, lookups scoped to the caller's org, parsing (the row type is in ./types.ts). */

const issueColumns = Object.entries(getTableColumns(issues));

/** An issue row as the database functions return it (`to_jsonb(issues)`: column names, timestamps as text), typed. */
export function issueRowFrom(json: Record<string, unknown>): IssueRow {
  const row: Record<string, unknown> = {};
  for (const [key, column] of issueColumns) {
    const value = json[column.name] ?? null;
    row[key] = value !== null && column.dataType === "date" ? new Date(value as string) : value;
  }
  return row as IssueRow;
}

/** A write's transaction; `charge` is what it owes, marked by `meter` (server/usage/meter.ts). */
export interface WriteScope extends MeterScope {
  tx: Db;
  ctx: Ctx;
  cipher: OrgCipher;
  now: Date;
}

export const isTerminal = (status: string) => status === "done" || status === "canceled";
/** gatesDependents (db/schema/dispatch.ts) for a row in memory. */
export const gatesDependentsNow = (row: { status: string; verification: string | null }) => !isTerminal(row.status) || row.verification === "pending";

/**
 * Runs `fn` in a transaction with the org's cipher; retries on deadlock or serialization
 * failure. What `fn` metered is charged before the commit, in the same transaction, so a
 * refusal (BILLING_INACTIVE, SPEND_CAP) rolls the write back and a failed write costs nothing.
 * A STALE_CLAIM refusal is counted after the rollback (server/issues/stale-refusals.ts).
 */
export async function inTransaction<T>(ctx: Ctx, fn: (scope: WriteScope) => Promise<T>): Promise<T> {
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  try {
    return await retryingConflicts(() =>
      transactionWithNotices(ctx.db, async (tx) => {
        const scope: WriteScope = { tx, ctx, cipher, now: ctx.clock.now() };
        const result = await fn(scope);
        await settleCharge(scope);
        return result;
      }),
    );
  } catch (error) {
    // Rolled back by now: a stale write refused is counted for the Fleet page outside it, whatever the door.
    await countIfStale(ctx, error);
    throw error;
  }
}

// Lower down, so a domain below this one (server/orgs: a prefix's rename) reruns its conflicts the same way.
export { retryingConflicts, RetryTransaction } from "../../db/retry.ts";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Sends a transaction's statements in this order without waiting for each result, so they
 * share one round trip: the server still runs them one after another, each seeing (and
 * waiting on the locks of) the ones before. Each thunk should send one statement when
 * called; the last may send several. (A thunk that awaits one statement before sending
 * another sends that one a round trip later, after the thunks behind it: fine only when no
 * later statement depends on it, and it costs that round trip.) A turn of the event loop
 * between thunks lets the lazy query builders hand each statement to the driver before the
 * next. Resolves to every result; if any fails, rejects with the first failure in order
 * (later ones only failed because the transaction had aborted). Inside a transaction only.
 */
export async function inOrder<T extends unknown[]>(...statements: { [K in keyof T]: () => PromiseLike<T[K]> }): Promise<T> {
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < statements.length; i++) {
    if (i > 0) await nextTurn();
    const started = statements[i]!();
    const result = new Promise((resolve, reject) => started.then(resolve, reject));
    // Observed by allSettled below; without this an early failure is an unhandled rejection meanwhile.
    result.catch(() => {});
    pending.push(result);
  }
  const settled = await Promise.allSettled(pending);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as T;
}

/**
 * `issues.identifier` names what a caller sent: the identifier as it reads now, so `OLD-42` still
 * finds `NEW-42` after the project's prefix was renamed (retasc_identifier, decision 089). Every
 * lookup of an issue by a caller's identifier goes through this or the SQL function itself.
 */
export const identifierIs = (orgId: string, identifier: string) => sql`${issues.identifier} = retasc_identifier(${orgId}, ${identifier})`;

/** Which of `asked` name this row (each read through retasc_identifier): how a list lookup tells which input found what. */
const askedFor = (orgId: string, asked: string[]) =>
  sql<string[]>`array(select w from unnest(${pgArray(asked)}::text[]) w where retasc_identifier(${orgId}, w) = ${issues.identifier})`;
export const identifierIn = (orgId: string, asked: string[]) =>
  sql<boolean>`${issues.identifier} in (select retasc_identifier(${orgId}, w) from unnest(${pgArray(asked)}::text[]) w)`;

/** These identifiers as they read now (retasc_identifier), in their order: for comparing a caller's list with identifiers read back. */
export async function currentIdentifiers(db: Db, orgId: string, identifiers: string[]): Promise<string[]> {
  if (identifiers.length === 0) return [];
  const rows = await query<{ current: string }>(
    db,
    sql`select retasc_identifier(${orgId}, w) as current from unnest(${pgArray(identifiers)}::text[]) with ordinality as t(w, n) order by n`,
  );
  return rows.map((r) => r.current);
}

/** The issue an identifier names, within what the principal reaches (an issue outside its projects is not found). */
export async function findIssue(
  tx: Db,
  reach: Reach,
  identifier: string,
  options: { forUpdate?: boolean } = {},
): Promise<IssueRow> {
  const lookup = async () => {
    const base = tx.select().from(issues).where(and(reachable(reach, issues), identifierIs(reach.orgId, identifier)));
    return options.forUpdate ? await base.for("update") : await base;
  };
  let rows = await lookup();
  // A locking read that waited for a rename of the project's prefix re-checks the renamed row against
  // the identifier as its statement read it before the rename: asked once more, the rename is in view.
  if (!rows[0] && options.forUpdate) rows = await lookup();
  if (!rows[0]) throw notFound(`issue ${identifier}`, "Check the identifier (like RTSC-42); list_issues shows what exists.");
  return rows[0];
}

/** Resolves an assignee argument (email, user id, "me", null) to an active member's user id. */
export async function resolveAssignee(tx: Db, ctx: Ctx, assignee: string | null): Promise<string | null> {
  if (assignee === null) return null;
  if (assignee.toLowerCase() === "me") {
    if (!ctx.principal.userId) throw invalidInput('"me" needs a human principal', "Pass an email instead.");
    return ctx.principal.userId;
  }
  const rows = await tx
    .select({ userId: members.userId, status: members.status })
    .from(members)
    .innerJoin(user, eq(user.id, members.userId))
    .where(
      and(
        eq(members.orgId, ctx.principal.orgId),
        or(eq(user.email, assignee.toLowerCase()), eq(user.id, assignee)),
      ),
    );
  const member = rows[0];
  if (!member) throw notFound(`member ${assignee}`, "Assign to a member's email, their user id, \"me\", or null; list_members shows who is in the org.");
  if (member.status !== "active") {
    throw new DomainError("INVALID_INPUT", `${assignee} is not an active member`, "Assign to an active member.");
  }
  return member.userId;
}

export async function orgTimeZone(tx: Db, orgId: string): Promise<string> {
  const rows = await tx.select({ tz: orgs.timeZone }).from(orgs).where(eq(orgs.id, orgId));
  return rows[0]?.tz ?? "UTC";
}

/** `dueAt` as given by a caller: epoch ms, ISO instant, or YYYY-MM-DD (end of that day in the org's zone). */
export function parseDueAt(value: number | string | null, timeZone: string): Date | null {
  if (value === null) return null;
  if (typeof value === "number") return new Date(value);
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const calendar = new Date(`${value}T00:00:00Z`);
    if (!Number.isNaN(calendar.getTime()) && calendar.toISOString().slice(0, 10) === value) {
      return endOfDayIn(value, timeZone);
    }
  } else if (/^\d{4}-\d{2}-\d{2}T/.test(value)) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw invalidInput(
    `dueAt "${value}" is not a date`,
    "Pass epoch milliseconds, an ISO 8601 instant (2026-12-01T17:00:00Z) or a date (2026-12-01).",
  );
}

export async function projectFor(tx: Db, ctx: Ctx, prefix?: string): Promise<{ id: string; prefix: string }> {
  const where = and(
    reachable(ctx.principal, projectReach),
    prefix
      ? projectNamedBy(ctx.principal.orgId, prefix.toUpperCase())
      : ctx.principal.projectId
        ? eq(projects.id, ctx.principal.projectId)
        : undefined,
  );
  const rows = await tx.select({ id: projects.id, prefix: projects.prefix }).from(projects).where(where).orderBy(projects.createdAt).limit(1);
  if (!rows[0]) throw notFound(prefix ? `project ${prefix}` : "project", "Pass `project` with a prefix from list_projects.");
  return rows[0];
}

/** Does the issue have dependency edges? Addressed by identifier, so the check can go out before the issue is read. */
export async function hasBlockEdges(tx: Db, orgId: string, identifier: string): Promise<boolean> {
  const rows = await query<{ found: boolean }>(
    tx,
    sql`select exists(
          select 1 from issues i join relations r on r.type = 'blocks' and (r.source_id = i.id or r.target_id = i.id)
          where i.org_id = ${orgId} and i.identifier = retasc_identifier(${orgId}, ${identifier})) as found`,
  );
  return Boolean(rows[0]?.found);
}

/**
 * An unlocked look at an issue's status and whether it has dependency edges, in one
 * statement (closing an issue asks both before taking its locks); null when not found.
 */
export async function peekStatusAndEdges(
  tx: Db,
  orgId: string,
  identifier: string,
): Promise<{ status: string; hasBlockEdges: boolean; openBlockerCount: number } | null> {
  const rows = await query<{ status: string; has_block_edges: boolean; open_blocker_count: number }>(
    tx,
    sql`select i.status, i.open_blocker_count, exists(
          select 1 from relations r where r.type = 'blocks' and (r.source_id = i.id or r.target_id = i.id)) as has_block_edges
        from issues i where i.org_id = ${orgId} and i.identifier = retasc_identifier(${orgId}, ${identifier})`,
  );
  const row = rows[0];
  return row ? { status: row.status, hasBlockEdges: Boolean(row.has_block_edges), openBlockerCount: Number(row.open_blocker_count) } : null;
}

export async function latestCheckpoint(tx: Db, issueId: string) {
  const rows = await tx
    .select()
    .from(checkpoints)
    .where(eq(checkpoints.issueId, issueId))
    .orderBy(desc(checkpoints.createdAt), desc(checkpoints.id))
    .limit(1);
  return rows[0] ?? null;
}

/** An issue's open blockers that `reach` sees, and how many others hold it back from outside the caller's projects (decision 042). */
export async function openBlockersOf(tx: Db, reach: Pick<Reach, "projectIds">, issueId: string) {
  const rows = await tx
    .select({ identifier: issues.identifier, status: issues.status, verification: issues.verification, projectId: issues.projectId })
    .from(relations)
    .innerJoin(issues, eq(issues.id, relations.sourceId))
    .where(
      and(
        eq(relations.targetId, issueId),
        eq(relations.type, "blocks"),
        gatesDependents(issues.status, issues.verification),
      ),
    )
    .orderBy(issues.identifier);
  const seen = rows.filter((r) => reaches(reach, r.projectId)).map(({ projectId: _, ...blocker }) => blocker);
  return { blockers: seen, outside: rows.length - seen.length };
}

/** Which of these identifiers (as given, old prefixes included) name issues `reach` sees; null: every one (an unscoped principal, decision 042). */
export async function identifiersInReach(db: Db, reach: Reach, identifiers: string[]): Promise<Set<string> | null> {
  if (reach.projectIds === null) return null;
  const wanted = [...new Set(identifiers)];
  if (wanted.length === 0) return new Set();
  const rows = await db.select({ asked: askedFor(reach.orgId, wanted) }).from(issues).where(and(reachable(reach, issues), identifierIn(reach.orgId, wanted)));
  return new Set(rows.flatMap((r) => r.asked));
}

/**
 * Locks the named issues of the org in one statement (id order, so lockers never deadlock); NOT_FOUND names a missing one.
 * Each row says which of `identifiers` named it (`asked`: an old prefix's identifier names the issue it reads as now).
 */
export async function lockIssues(tx: Db, reach: Reach, identifiers: string[], mode: "share" | "update") {
  const wanted = [...new Set(identifiers)];
  const lock = () =>
    tx
      .select({ id: issues.id, identifier: issues.identifier, status: issues.status, verification: issues.verification, asked: askedFor(reach.orgId, wanted) })
      .from(issues)
      .where(and(reachable(reach, issues), identifierIn(reach.orgId, wanted)))
      .orderBy(issues.id)
      .for(mode);
  const found = (rows: { asked: string[] }[]) => wanted.every((identifier) => rows.some((r) => r.asked.includes(identifier)));
  let rows = await lock();
  // As in findIssue: a row that waited for a rename is found by asking again.
  if (!found(rows)) rows = await lock();
  const missing = wanted.find((identifier) => !rows.some((r) => r.asked.includes(identifier)));
  if (missing) throw notFound(`issue ${missing}`, "Check the identifier (like RTSC-42); list_issues shows what exists.");
  return rows;
}

/** A parent is a container (work:false) in the same org, and never the issue itself or one of its descendants. */
export async function validParent(tx: Db, reach: Reach, identifier: string, childId: string | null) {
  const parent = await findIssue(tx, reach, identifier);
  if (parent.work) {
    throw new DomainError("INVALID_INPUT", `${identifier} is a work issue, not a container`, "Parents are containers (work:false).");
  }
  let cursor: string | null = parent.id;
  for (let depth = 0; cursor && depth < 100; depth++) {
    if (cursor === childId) throw new DomainError("CYCLE", `${identifier} is inside this issue`, "Pick a parent that is not one of its descendants.");
    const up: { parentId: string | null }[] = await tx.select({ parentId: issues.parentId }).from(issues).where(eq(issues.id, cursor));
    cursor = up[0]?.parentId ?? null;
  }
  return parent;
}
