import { and, eq, inArray, sql } from "drizzle-orm";
import { query, type Db } from "../../../db/client.ts";
import { linearLinks, relations } from "../../../db/schema/index.ts";
import { rerank } from "../../issues/ranking.ts";
import { newId } from "../../orgs/index.ts";
import { digest, inChunks, linksOf, writeLinks } from "./apply-rows.ts";
import { insertJson } from "./json-rows.ts";
import type { SourceIssue } from "./stream.ts";
import { isOpen } from "../../../db/schema/dispatch.ts";

/**
 * Once every page is in (any source): parents (an issue with children is a container,
 * work:false), relations (added when new, removed when the source no longer has them), blocker
 * counts, ranking, and, when the source's numbers were kept, the project's next number after the
 * highest imported one. Each write only where the stored value
 * differs, so a re-import with nothing changed writes nothing.
 */
export async function linkAll(tx: Db, orgId: string, projectId: string, all: Pick<SourceIssue, "id" | "number" | "parentId" | "relations">[], keepNumbers: boolean) {
  const links = await linksOf(tx, orgId, [...new Set(all.flatMap((i) => [i.id, ...i.relations.map((r) => r.id), ...i.relations.map((r) => r.targetId)]))]);
  const idOf = (linearId: string | null) => (linearId ? (links.get(linearId)?.retascId ?? null) : null);
  const imported = all.map((i) => idOf(i.id)!).filter(Boolean);
  const parents = new Set(all.map((i) => i.parentId).filter((p): p is string => p !== null));
  const rows = all.map((i) => ({ id: idOf(i.id)!, parentId: idOf(i.parentId), work: !parents.has(i.id) }));
  // One JSON parameter for every row: a bound parameter per value cost more to build than the update.
  await tx.execute(sql`update issues set parent_id = v.parent_id, work = v.work
    from json_to_recordset(${JSON.stringify(rows.map((r) => ({ id: r.id, parent_id: r.parentId, work: r.work })))}::json) as v(id text, parent_id text, work boolean)
    where issues.id = v.id and issues.org_id = ${orgId} and (issues.parent_id is distinct from v.parent_id or issues.work <> v.work)`);
  const wanted = new Set<string>();
  const fresh: { sourceRelationId: string; row: typeof relations.$inferInsert }[] = [];
  for (const i of all) {
    for (const r of i.relations) {
      wanted.add(r.id);
      const sourceId = idOf(i.id);
      const targetId = idOf(r.targetId);
      // A relation to an issue not imported (another team, project or source) has nothing to point at here.
      if (!sourceId || !targetId || links.has(r.id)) continue;
      fresh.push({ sourceRelationId: r.id, row: { id: newId(), orgId, sourceId, targetId, type: r.type, createdAt: new Date(r.createdAt) } });
    }
  }
  let edgesChanged = fresh.length > 0;
  await inChunks(fresh, async (chunk) => {
    await insertJson(tx, relations, chunk.map((f) => f.row), sql`on conflict do nothing`);
    // The edge may have been there already (made by hand, or restored from an export): the link names the one that is.
    const rows = await tx
      .select({ id: relations.id, sourceId: relations.sourceId, targetId: relations.targetId, type: relations.type })
      .from(relations)
      .where(and(eq(relations.orgId, orgId), inArray(relations.sourceId, [...new Set(chunk.map((f) => f.row.sourceId))])));
    const edge = new Map(rows.map((r) => [`${r.sourceId}|${r.targetId}|${r.type}`, r.id]));
    await writeLinks(
      tx,
      chunk.map((f) => ({ orgId, linearId: f.sourceRelationId, kind: "relation" as const, retascId: edge.get(`${f.row.sourceId}|${f.row.targetId}|${f.row.type}`)!, hash: digest([f.row.type]) })),
    );
  });
  // Relations an earlier import brought that Linear no longer has: removed, with their links.
  for (let at = 0; at < imported.length; at += 1000) {
    const gone = await query<{ linear_id: string; retasc_id: string }>(
      tx,
      sql`select l.linear_id, l.retasc_id from linear_links l join relations r on r.id = l.retasc_id
          where l.org_id = ${orgId} and l.kind = 'relation' and r.source_id in (${sql.join(imported.slice(at, at + 1000).map((id) => sql`${id}`), sql`, `)})`,
    );
    const stale = gone.filter((g) => !wanted.has(g.linear_id));
    if (stale.length === 0) continue;
    edgesChanged = true;
    await tx.delete(relations).where(inArray(relations.id, stale.map((s) => s.retasc_id)));
    await tx.delete(linearLinks).where(and(eq(linearLinks.orgId, orgId), inArray(linearLinks.linearId, stale.map((s) => s.linear_id))));
  }
  await tx.execute(sql`update issues set open_blocker_count = coalesce(b.n, 0)
    from issues i left join (select r.target_id, count(*)::int as n from relations r join issues s on s.id = r.source_id
          where r.org_id = ${orgId} and r.type = 'blocks' and ${isOpen(sql`s.status`)} group by r.target_id) b on b.target_id = i.id
    where issues.id = i.id and i.project_id = ${projectId} and issues.open_blocker_count <> coalesce(b.n, 0)`);
  const blocked = await query<{ id: string }>(tx, sql`select distinct r.target_id as id from relations r join issues t on t.id = r.target_id where t.project_id = ${projectId} and r.type = 'blocks'`);
  for (let at = 0; at < blocked.length; at += 2000) await rerank(tx, blocked.slice(at, at + 2000).map((b) => b.id));
  if (!keepNumbers) return { edgesChanged };
  const highest = Math.max(0, ...all.map((i) => i.number ?? 0));
  await tx.execute(sql`update projects set next_number = ${highest + 1} where id = ${projectId} and next_number < ${highest + 1}`);
  return { edgesChanged };
}
