import { and, asc, eq, inArray, or, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { members, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { decodeCursor, encodeCursor, pageArgs } from "../paging.ts";
import { actorOf } from "./access.ts";

/** The org's people as a picker offers them (a reviewer, a person to filter by): searched, paged, or named. */

/** `query` found in any of `fields`, case-insensitively (strpos: the needle is text, not a pattern). */
export const matching = (needle: string | undefined, fields: SQL[]): SQL | undefined =>
  needle ? or(...fields.map((field) => sql`strpos(lower(coalesce(${field}, '')), ${needle}) > 0`)) : undefined;

const PICKER_QUERY_MAX = 200;

/** A picker's search as a page's URL gives it (`?q=`): trimmed and cut to what a search takes, so a long one narrows by its start instead of failing the page. */
export const pickerQuery = (raw: string | null | undefined) => (raw ?? "").trim().slice(0, PICKER_QUERY_MAX);

export const findPeopleInput = z.object({
  /** Part of a name or email, case-insensitive; empty for everyone. */
  q: z.string().trim().max(PICKER_QUERY_MAX).optional(),
  /** Suspended people too (a ledger filter reaches those who were here); active ones only without it. */
  includeSuspended: z.boolean().optional(),
  ...pageArgs,
});

/** Where a page of people ends: the last person's email and member id. */
const personPosition = z.object({ e: z.string().max(400), i: z.string().max(100) });

export interface PersonChoice {
  userId: string;
  name: string;
  email: string;
}

/**
 * The org's active people (suspended too with `includeSuspended`) matching `q` (in name or email), by email, a page at a time (at most
 * `limit`, default 50): what a picker offers (a reviewer, a person to filter by), so a person in
 * an org of any size is found by searching, never cut off after the first page.
 */
export async function findPeople(ctx: Ctx, raw: z.input<typeof findPeopleInput> = {}): Promise<{ people: PersonChoice[]; nextCursor?: string }> {
  const input = findPeopleInput.parse(raw);
  const limit = input.limit ?? 50;
  const after = decodeCursor(input.cursor, personPosition);
  await actorOf(ctx);
  const rows = await peopleOfOrg(
    ctx,
    input.includeSuspended,
    matching(input.q?.toLowerCase() || undefined, [sql`${user.name}`, sql`${user.email}`]),
    after ? sql`(${user.email}, ${members.id}) > (${after.e}, ${after.i})` : undefined,
  )
    .orderBy(asc(user.email), asc(members.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    people: page.map(({ userId, name, email }) => ({ userId, name, email })),
    ...(rows.length > limit && last ? { nextCursor: encodeCursor({ e: last.email, i: last.memberId }) } : {}),
  };
}

/** Which of `keys` (user ids or emails) name a person of the org (active, or any with `includeSuspended`): a picker's current choices, wherever they sort. */
export async function peopleNamed(ctx: Ctx, keys: string[], options: { includeSuspended?: boolean } = {}): Promise<PersonChoice[]> {
  const wanted = [...new Set(keys.map((k) => k.trim()).filter((k) => k !== ""))].slice(0, 200);
  if (wanted.length === 0) return [];
  await actorOf(ctx);
  const rows = await peopleOfOrg(ctx, options.includeSuspended, or(inArray(members.userId, wanted), inArray(user.email, wanted.map((k) => k.toLowerCase()))));
  return rows.map(({ userId, name, email }) => ({ userId, name, email }));
}

/** The org's people (active, or any with `includeSuspended`) meeting `conditions`: the one query behind the pickers. */
function peopleOfOrg(ctx: Ctx, includeSuspended: boolean | undefined, ...conditions: (SQL | undefined)[]) {
  return ctx.db
    .select({ memberId: members.id, userId: members.userId, name: user.name, email: user.email })
    .from(members)
    .innerJoin(user, eq(user.id, members.userId))
    .where(and(eq(members.orgId, ctx.principal.orgId), includeSuspended ? undefined : eq(members.status, "active"), ...conditions))
    .$dynamic();
}
