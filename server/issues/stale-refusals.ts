import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { DomainError } from "../errors.ts";
import { isTransaction } from "../events/index.ts";

/**
 * The Fleet page's count of fenced writes refused as stale (fleet_hours.stale_refused, decision
 * 027), kept by the refusal itself: every STALE_CLAIM is raised inside a write's transaction
 * (inTransaction, server/issues/store.ts), which counts it once that transaction has rolled back,
 * whichever door sent the write (MCP, a Dash action, a CLI endpoint). A refused write leaves no
 * activity row, so this is its only trace.
 */

/** One more stale write refused this hour, counted in the project of the issue it named (org-wide when it named none). */
export async function recordStaleRefusal(db: Db, orgId: string, identifier: string | null, now: Date): Promise<void> {
  const hour = new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000).toISOString();
  await query(
    db,
    sql`insert into fleet_hours (org_id, project_id, hour, stale_refused)
        values (${orgId}, (select project_id from issues where org_id = ${orgId} and identifier = retasc_identifier(${orgId}, ${identifier})), ${hour}::timestamptz, 1)
        on conflict (org_id, hour, project_id) do update set stale_refused = fleet_hours.stale_refused + 1`,
  );
}

/**
 * Counts `error` if it is a stale refusal that ends the operation: a write nested in another
 * transaction (intake's, which handles the refusal and goes on) leaves it to that one's caller.
 * Losing a count never changes the refusal the caller gets.
 */
export async function countIfStale(ctx: Ctx, error: unknown): Promise<void> {
  if (!(error instanceof DomainError) || error.code !== "STALE_CLAIM" || isTransaction(ctx.db)) return;
  const identifier = typeof error.details?.identifier === "string" ? error.details.identifier : null;
  await recordStaleRefusal(ctx.db, ctx.principal.orgId, identifier, ctx.clock.now()).catch(() => undefined);
}
