/**
 * What bench/imports.ts checks after a re-import with changes and after an import killed half
 * way and resumed, on the project as the tests see it (server/transfer/linear/testing.ts's
 * snapshot, decrypted, keyed by identifier, with no Retasc ids in it).
 */
import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Services } from "../../server/context.ts";
import { snapshotProject, type ImportedIssue } from "../../server/transfer/linear/testing.ts";
import { changedTitle, lateComment } from "./import-fake.ts";

type Snapshot = Map<string, ImportedIssue>;

/** A project's issues as the tests see them, and how many of its issues have a link to their source item (one each, or something was duplicated). */
export async function projectNow(services: Services, orgId: string, projectId: string): Promise<{ prefix: string; issues: Snapshot; linked: number }> {
  const [project] = await query<{ prefix: string; linked: number }>(
    services.db,
    sql`select p.prefix, (select count(*)::int from linear_links l join issues i on i.id = l.retasc_id where l.org_id = ${orgId} and l.kind = 'issue' and i.project_id = p.id) as linked
          from projects p where p.id = ${projectId} and p.org_id = ${orgId}`,
  );
  return { prefix: project!.prefix, issues: await snapshotProject(services, orgId, project!.prefix), linked: project!.linked };
}

/** The titles `k` changed items carry after the change. */
const changedTitles = (k: number) => new Set(Array.from({ length: k }, (_, j) => changedTitle(j)));
const commentsIn = (s: Snapshot) => [...s.values()].reduce((n, i) => n + i.comments.length, 0);
/** An issue as compared across two imports: its history without the `updated` entries a re-import adds. */
const plain = (i: ImportedIssue | undefined) => (i ? JSON.stringify({ ...i, history: i.history.filter((h) => !h.startsWith("updated@")) }) : "missing");

/**
 * What is wrong with `after`, the project re-imported after `k` items were changed at the source
 * (./import-fake.ts's `change`): nothing when no issue was added or lost, each changed item's issue
 * carries its new title once with its late comment last, and no comment was copied.
 */
export function changesMissed(before: Snapshot, after: Snapshot, linked: number, k: number): string[] {
  const wrong: string[] = [];
  if (after.size !== before.size) wrong.push(`${after.size} issues, ${before.size} before`);
  if (linked !== after.size) wrong.push(`${linked} source links for ${after.size} issues`);
  if (commentsIn(after) !== commentsIn(before) + k) wrong.push(`${commentsIn(after)} comments, ${commentsIn(before)} before and ${k} added`);
  const titled = new Map<string, ImportedIssue[]>();
  for (const issue of after.values()) titled.set(issue.title, [...(titled.get(issue.title) ?? []), issue]);
  for (let j = 0; j < k; j++) {
    const found = titled.get(changedTitle(j)) ?? [];
    if (found.length !== 1) wrong.push(`${found.length} issues titled "${changedTitle(j)}"`);
    else if (found[0]!.comments.at(-1)?.body !== lateComment(j)) wrong.push(`"${changedTitle(j)}" ends with ${JSON.stringify(found[0]!.comments.at(-1)?.body)}`);
  }
  // Every issue not changed at the source is as the first import left it.
  const changed = changedTitles(k);
  const moved = [...after].filter(([identifier, issue]) => !changed.has(issue.title) && plain(issue) !== plain(before.get(identifier)));
  if (moved.length > 0) wrong.push(`${moved.length} issues not changed at the source differ, ${moved[0]![0]} the first`);
  return wrong;
}

/**
 * Where `resumed` (the changed source imported in one go, killed half way and resumed) differs from
 * `whole` (imported without a stop, then again after `k` items changed): nothing, or the first few
 * identifiers that differ. The whole project's history has the re-import's `updated` entries, left
 * out of both; and a changed item's history is not compared at all: a fresh import dates an end the
 * source gives no time for at the item's last update (docs/import.md), which the change moved,
 * where the re-import keeps the end it first recorded.
 */
export function differences(whole: Snapshot, resumed: Snapshot, k: number): string[] {
  const wrong: string[] = [];
  if (resumed.size !== whole.size) wrong.push(`${resumed.size} issues, ${whole.size} in the whole import`);
  const changed = changedTitles(k);
  const compared = (i: ImportedIssue | undefined) => (i && changed.has(i.title) ? plain({ ...i, history: [] }) : plain(i));
  for (const [identifier, issue] of whole) {
    const other = resumed.get(identifier);
    if (compared(other) === compared(issue)) continue;
    const a = JSON.parse(compared(issue)) as Record<string, unknown>;
    const b = other ? (JSON.parse(compared(other)) as Record<string, unknown>) : {};
    const keys = Object.keys(a).filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
    wrong.push(`${identifier} differs in ${keys.map((k) => `${k}: ${JSON.stringify(b[k]).slice(0, 200)} (whole: ${JSON.stringify(a[k]).slice(0, 200)})`).join("; ")}`);
    if (wrong.length >= 3) break;
  }
  return wrong;
}
