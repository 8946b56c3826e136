import { and, desc, eq, sql } from "drizzle-orm";
import { pgArray, query, type Db } from "../../db/client.ts";
import { checkpoints, issues, relations } from "../../db/schema/index.ts";
import { DomainError, notFound } from "../errors.ts";
import { gatesDependents } from "../../db/schema/dispatch.ts";
import { reachable, reaches, type Reach } from "../orgs/scope.ts";
import type { IssueRow } from "./types.ts";

/** Issue lookups scoped to the caller's org and reach: by identifier (old prefixes too), locked, their edges and checkpoint. */

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
 * An unlocked look at an issue's status, whether it has dependency edges and how many open
 * blockers hold it, in one statement (closing an issue asks before taking its locks: whether it
 * needs the graph lock, and which kind); null when not found.
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
