import { and, asc, eq, gt, sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { activity, agentKeys, issues, labels, orgs, projectPrefixAliases, projects } from "../../db/schema/index.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { notFound } from "../errors.ts";
import { iso, type ExportActivity, type ExportAgent, type ExportLabel, type ExportPerson, type ExportProject } from "./format.ts";

/**
 * Reads an org for export, decrypted: the org, its people, keys, projects and labels whole, its
 * activity in keyset pages (its issues, paged by project: ./read-issues.ts). Each page is one
 * indexed range read, so memory stays flat however large the org. Pages read committed data as
 * they go (no snapshot transaction, which would hold a connection, and PGlite's only one, for as
 * long as the client downloads): a write landing mid-export may show up or not, never half.
 */
export const ACTIVITY_PAGE = 2000;

export async function readOrg(db: Db, orgId: string) {
  const [org] = await db.select().from(orgs).where(eq(orgs.id, orgId));
  if (!org) throw notFound(`org ${orgId}`, "Pass an org id (bootstrap prints it; the Dash shows it).");
  return { id: org.id, name: org.name, timeZone: org.timeZone, createdAt: org.createdAt.toISOString() };
}

/** The org's members, and everyone else its rows name (people who left keep their history). */
export async function readPeople(db: Db, orgId: string): Promise<ExportPerson[]> {
  const rows = await query<{ id: string; email: string; name: string; role: string | null; status: string | null; since: string | Date | null }>(
    db,
    sql`select u.id, u.email, u.name, m.role, m.status, m.created_at as since
        from "user" u left join members m on m.user_id = u.id and m.org_id = ${orgId}
        where m.id is not null or u.id in (
          select author_id from issues where org_id = ${orgId}
          union select assignee_id from issues where org_id = ${orgId}
          union select submitter_id from issues where org_id = ${orgId}
          union select author_id from comments where org_id = ${orgId}
          union select author_id from attachments where org_id = ${orgId}
          union select user_id from checkpoints where org_id = ${orgId}
          union select actor_id from activity where org_id = ${orgId}
          union select user_id from agent_keys where org_id = ${orgId})
        order by u.email`,
  );
  return rows.map((r) => ({
    id: r.id,
    email: r.email,
    name: r.name,
    member: r.role ? { role: r.role as "owner", status: r.status as "active", since: new Date(r.since!).toISOString() } : null,
  }));
}

export async function readAgents(db: Db, orgId: string): Promise<ExportAgent[]> {
  const rows = await db
    .select({ key: agentKeys, project: projects.prefix })
    .from(agentKeys)
    .leftJoin(projects, eq(projects.id, agentKeys.projectId))
    .where(eq(agentKeys.orgId, orgId))
    .orderBy(asc(agentKeys.createdAt), asc(agentKeys.id));
  return rows.map(({ key, project }) => ({
    id: key.id,
    userId: key.userId,
    project,
    runtime: key.runtime,
    keyPrefix: key.prefix,
    claimCap: key.claimCap,
    parentKeyId: key.parentKeyId,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: iso(key.lastUsedAt),
    revokedAt: iso(key.revokedAt),
    expiresAt: iso(key.expiresAt),
  }));
}

export async function readProjects(db: Db, orgId: string): Promise<(ExportProject & { id: string })[]> {
  const rows = await db.select().from(projects).where(eq(projects.orgId, orgId)).orderBy(asc(projects.prefix));
  const old = await db
    .select({ projectId: projectPrefixAliases.projectId, prefix: projectPrefixAliases.prefix })
    .from(projectPrefixAliases)
    .where(eq(projectPrefixAliases.orgId, orgId))
    .orderBy(asc(projectPrefixAliases.prefix));
  return rows.map((p) => ({
    id: p.id,
    prefix: p.prefix,
    name: p.name,
    nextNumber: p.nextNumber,
    createdAt: p.createdAt.toISOString(),
    verification: { mode: p.verificationMode, checks: p.verificationChecks, windowMinutes: p.verificationWindowMinutes, stallMinutes: p.stallMinutes, quarantineAfter: p.quarantineAfter, releaseStalled: p.releaseStalled },
    oldPrefixes: old.filter((a) => a.projectId === p.id).map((a) => a.prefix),
  }));
}

export async function readLabels(db: Db, orgId: string): Promise<ExportLabel[]> {
  const rows = await db.select().from(labels).where(eq(labels.orgId, orgId)).orderBy(asc(labels.name));
  return rows.map((l) => ({ name: l.name, color: l.color, createdAt: l.createdAt.toISOString() }));
}

/** The org's activity log in pages, oldest first (the activity_org_idx index). */
export async function* activityPages(db: Db, cipher: OrgCipher, orgId: string, pageSize = ACTIVITY_PAGE): AsyncGenerator<ExportActivity[]> {
  let after = 0;
  for (;;) {
    const page = await db
      .select({ entry: activity, identifier: issues.identifier })
      .from(activity)
      .leftJoin(issues, eq(issues.id, activity.issueId))
      .where(and(eq(activity.orgId, orgId), gt(activity.id, after)))
      .orderBy(asc(activity.id))
      .limit(pageSize);
    if (page.length === 0) return;
    yield page.map(({ entry, identifier }) => ({
      issue: identifier,
      kind: entry.kind,
      actorId: entry.actorId,
      keyId: entry.keyId,
      runtime: entry.runtime,
      facts: entry.facts ?? null,
      detail: entry.detailEnc ? (JSON.parse(cipher.decrypt(entry.detailEnc)!) as Record<string, unknown>) : null,
      createdAt: entry.createdAt.toISOString(),
    }));
    after = page[page.length - 1]!.entry.id;
    if (page.length < pageSize) return;
  }
}
