import { sql } from "drizzle-orm";
import { z } from "zod";
import { query } from "../../db/client.ts";
import { changeTypes } from "../../constants/change-types.ts";
import type { Ctx } from "../context.ts";
import { decodeCursor, encodeCursor, pageArgs } from "../paging.ts";
import { analyticsPeriod, flowEvents, periodOf, shortString } from "./overview.ts";

/**
 * The issues behind a figure of analytics_overview (decision 071), a page at a time: the
 * period's finishes (newest first), cancels, creates, its slowest finishes (longest lead
 * time first), or its accepted reviews (longest time in review first). Filtered as the overview splits: by changeType ("none" for issues without one) and
 * by the runtime that made the move. Only the page's titles are decrypted.
 */
export const ANALYTICS_FIGURES = ["finished", "canceled", "created", "slowest", "review"] as const;

export const analyticsIssuesInput = z.object({
  ...analyticsPeriod,
  figure: z.enum(ANALYTICS_FIGURES).default("finished"),
  // Checked by refine, so tools/list does not list the types again (save_issue's schema does).
  changeType: z
    .string()
    .refine((v) => v === "none" || (changeTypes as readonly string[]).includes(v), { error: `must be one of ${changeTypes.join(", ")} or none` })
    .optional(),
  runtime: shortString(64).optional(),
  ...pageArgs,
});

const position = z.object({ k: z.number(), i: z.number().int() });

interface Row {
  id: number;
  identifier: string;
  title_enc: string;
  status: string;
  change_type: string | null;
  runtime: string | null;
  at: string;
  filed: string;
  claimed: string | null;
  reviewed_from: string | null;
  sort_key: number;
}

export async function analyticsIssues(ctx: Ctx, raw: z.input<typeof analyticsIssuesInput>) {
  const input = analyticsIssuesInput.parse(raw);
  const period = await periodOf(ctx, input);
  const limit = input.limit ?? 50;
  const after = decodeCursor(input.cursor, position);
  const what = input.figure === "created" || input.figure === "canceled" ? input.figure : "done";
  // The key the page is ordered by, descending: the move's time, the lead time of a finish, or
  // the time in review of an accepted review. float8 on both sides of the cursor's comparison,
  // so the value handed out compares equal to itself.
  const key =
    input.figure === "slowest"
      ? sql`(extract(epoch from (f.at - f.filed)) * 1000)::float8`
      : input.figure === "review"
        ? sql`(extract(epoch from (f.at - f.reviewed_from)) * 1000)::float8`
        : sql`(extract(epoch from f.at) * 1000)::float8`;
  const reviewed = input.figure === "review" ? sql`f.reviewed_from is not null` : sql`true`;
  const changeType = input.changeType ? sql`coalesce(f.change_type, 'none') = ${input.changeType}` : sql`true`;
  const runtime = input.runtime ? sql`f.runtime = ${input.runtime}` : sql`true`;
  const from = after ? sql`(${key}, f.id) < (${after.k}::float8, ${after.i}::bigint)` : sql`true`;
  const rows = await query<Row>(
    ctx.db,
    sql`with f as (${flowEvents(ctx, period)})
        select f.id, f.identifier, f.title_enc, f.status, f.change_type, f.runtime, f.at, f.filed, f.claimed, f.reviewed_from, ${key} as sort_key
        from f where f.what = ${what} and ${reviewed} and ${changeType} and ${runtime} and ${from}
        order by ${key} desc, f.id desc limit ${limit + 1}`,
  );
  const page = rows.slice(0, limit);
  const cipher = await ctx.keyring.forOrg(ctx.db, period.orgId);
  const span = (end: string, start: string | null) => (start ? new Date(end).getTime() - new Date(start).getTime() : null);
  const last = page[page.length - 1];
  return {
    figure: input.figure,
    from: period.from.toISOString(),
    to: period.to.toISOString(),
    issues: page.map((r) => ({
      identifier: r.identifier,
      title: cipher.decrypt(r.title_enc) ?? "",
      status: r.status,
      changeType: r.change_type,
      runtime: r.runtime,
      at: new Date(r.at).toISOString(),
      cycleMs: what === "done" ? span(r.at, r.claimed) : null,
      leadMs: what === "done" ? span(r.at, r.filed) : null,
      reviewMs: what === "done" ? span(r.at, r.reviewed_from) : null,
    })),
    ...(rows.length > limit && last ? { nextCursor: encodeCursor({ k: Number(last.sort_key), i: Number(last.id) }) } : {}),
  };
}
