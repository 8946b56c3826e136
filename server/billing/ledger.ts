import { and, desc, eq, gte, lt, or, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { query } from "../../db/client.ts";
import { billingCharges, issues, orgs, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { invalidInput } from "../errors.ts";
import { actorOf } from "../orgs/access.ts";
import { meterTiers } from "../usage/rate-card.ts";

export const listLedgerInput = z.object({
  person: z.string().trim().min(1).max(320).optional().describe("a person's user id or email"),
  runtime: z.string().trim().min(1).max(64).optional(),
  tool: z.string().trim().min(1).max(64).optional(),
  day: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, "must be YYYY-MM-DD")
    .optional()
    .describe("a calendar day in the org's time zone"),
  cursor: z.string().regex(/^\d{1,18}$/, "must be a nextCursor from a previous page").optional(),
  limit: z.number().int().min(1).max(200).default(50),
});

/**
 * The charges, newest first, filtered by person, runtime, tool and day (in the org's time
 * zone), a page at a time (nextCursor). Owners and admins see everyone's; a member only their own.
 */
export async function listLedger(ctx: Ctx, raw: z.input<typeof listLedgerInput> = {}) {
  const input = listLedgerInput.parse(raw);
  const orgId = ctx.principal.orgId;
  const actor = await actorOf(ctx);
  const filters: SQL[] = [eq(billingCharges.orgId, orgId)];
  if (actor.role === "member") filters.push(eq(billingCharges.userId, actor.userId));
  if (input.person) {
    const people = await ctx.db
      .select({ id: user.id })
      .from(user)
      .where(or(eq(user.id, input.person), eq(user.email, input.person.toLowerCase())));
    filters.push(eq(billingCharges.userId, people[0]?.id ?? input.person));
  }
  if (input.runtime) filters.push(eq(billingCharges.runtime, input.runtime));
  if (input.tool) filters.push(eq(billingCharges.tool, input.tool));
  if (input.day) {
    const calendar = new Date(`${input.day}T00:00:00Z`);
    if (Number.isNaN(calendar.getTime()) || calendar.toISOString().slice(0, 10) !== input.day) {
      throw invalidInput(`day "${input.day}" is not a date`, "Pass a calendar day as YYYY-MM-DD.");
    }
    const [bounds] = await query<{ from: string; to: string }>(
      ctx.db,
      sql`select (${input.day}::date)::timestamp at time zone o.time_zone as "from",
                 (${input.day}::date + 1)::timestamp at time zone o.time_zone as "to"
            from ${orgs} o where o.id = ${orgId}`,
    );
    filters.push(gte(billingCharges.createdAt, new Date(bounds!.from)), lt(billingCharges.createdAt, new Date(bounds!.to)));
  }
  if (input.cursor) filters.push(lt(billingCharges.id, Number(input.cursor)));
  const rows = await ctx.db
    .select({
      id: billingCharges.id,
      at: billingCharges.createdAt,
      userId: billingCharges.userId,
      email: user.email,
      name: user.name,
      keyId: billingCharges.keyId,
      runtime: billingCharges.runtime,
      tool: billingCharges.tool,
      tier: billingCharges.tier,
      microCredits: billingCharges.microCredits,
      issue: issues.identifier,
    })
    .from(billingCharges)
    .leftJoin(user, eq(user.id, billingCharges.userId))
    .leftJoin(issues, eq(issues.id, billingCharges.issueId))
    .where(and(...filters))
    .orderBy(desc(billingCharges.id))
    .limit(input.limit + 1);
  const page = rows.slice(0, input.limit);
  return {
    entries: page.map((row) => ({
      at: row.at.toISOString(),
      person: row.userId ? { userId: row.userId, email: row.email ?? null, name: row.name ?? null } : null,
      keyId: row.keyId,
      runtime: row.runtime,
      tool: row.tool,
      tier: row.tier as (typeof meterTiers)[number],
      microCredits: row.microCredits,
      issue: row.issue ?? null,
    })),
    nextCursor: rows.length > input.limit ? String(page[page.length - 1]!.id) : null,
  };
}
