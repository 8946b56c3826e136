/** A project's prefix, which stays with the project after a rename (decision 089), and creating a project with one. */
import { eq, or, sql } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import { projects } from "../../db/schema/index.ts";
import { DomainError } from "../errors.ts";
import { newId, prefixSchema } from "./fields.ts";

/** The project a prefix names in an org: its current prefix, or one it had before a rename (decision 089). */
export const projectNamedBy = (orgId: string, prefix: string) =>
  or(eq(projects.prefix, prefix), sql`${projects.id} in (select project_id from project_prefix_aliases where org_id = ${orgId} and prefix = ${prefix})`)!;

/**
 * Refuses a prefix another project of the org has, now or before a rename (decision 089): an old
 * prefix still names that project's issues (`OLD-42`), so it is never given to another project.
 * `projectId`: the project asking, which may take back a prefix of its own.
 */
export async function requirePrefixFree(db: Db, orgId: string, prefix: string, projectId: string | null): Promise<void> {
  const rows = await query<{ project_id: string; current: string; old: boolean }>(
    db,
    sql`select id as project_id, prefix as current, false as old from projects where org_id = ${orgId} and prefix = ${prefix}
        union all
        select p.id, p.prefix, true from project_prefix_aliases a join projects p on p.id = a.project_id
         where a.org_id = ${orgId} and a.prefix = ${prefix}`,
  );
  const other = rows.find((r) => r.project_id !== projectId);
  if (!other) return;
  if (!other.old) {
    throw new DomainError("CONFLICT", `prefix ${prefix} is already used in this org`, "Pick another prefix.", { reason: "prefix_in_use", prefix, project: other.current });
  }
  throw new DomainError(
    "CONFLICT",
    `prefix ${prefix} is an old prefix of project ${other.current}: ${prefix}-1, ${prefix}-2, … still name its issues`,
    "Pick another prefix; an old prefix stays with the project that had it.",
    { reason: "prefix_is_old", prefix, project: other.current },
  );
}

/** A unique violation on a project's prefix (two writers took it at once): the refusal requirePrefixFree gives. */
export function prefixRaceRefusal(error: unknown, prefix: string): DomainError | null {
  const codeOf = (e: unknown) => (e && typeof e === "object" && "code" in e ? String((e as { code: unknown }).code) : "");
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (codeOf(error) !== "23505" && codeOf(cause) !== "23505") return null;
  return new DomainError("CONFLICT", `prefix ${prefix} is already used in this org`, "Pick another prefix.", { reason: "prefix_in_use", prefix });
}

export async function createProject(
  db: Db,
  input: { orgId: string; name: string; prefix: string },
): Promise<{ id: string; prefix: string }> {
  const prefix = prefixSchema.parse(input.prefix);
  const name = z.string().trim().min(1).max(100).parse(input.name);
  await requirePrefixFree(db, input.orgId, prefix, null);
  const id = newId();
  await db.insert(projects).values({ id, orgId: input.orgId, name, prefix });
  return { id, prefix };
}
