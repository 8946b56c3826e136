import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";

/**
 * A session's own calls renew the leases it holds (decision 036): hosted agents and CI cannot run
 * a heartbeat loop, and an agent that keeps reading and writing is plainly alive. At most once per
 * renewal interval per session in this process, and in SQL at most once per interval per lease,
 * so the usual call costs no statement at all; a silence past the TTL still lapses them.
 */

/** How often a session's calls renew its leases: once a minute, or a third of a short test TTL. */
export const renewalIntervalMs = (leaseTtlMs: number) => Math.min(60_000, Math.floor(leaseTtlMs / 3));

/** When this process last renewed each session's leases. */
const lastRenewal = new Map<string, number>();

/**
 * Renews the caller's session's live leases that were last renewed an interval ago or more.
 * Rows another transaction holds are skipped (that write is the session's own or ends the lease),
 * so a renewal never waits on, or deadlocks with, a write. Returns how many leases it renewed.
 */
export async function renewSessionLeases(ctx: Ctx): Promise<number> {
  const { sessionId, keyId, orgFrozen } = ctx.principal;
  // A frozen org's leases keep their expiry (decision 110): its calls read on, renewing nothing.
  if (!sessionId || !keyId || orgFrozen) return 0;
  const calledAt = ctx.clock.now().getTime();
  const interval = renewalIntervalMs(ctx.config.leaseTtlMs);
  const last = lastRenewal.get(sessionId);
  if (last !== undefined && calledAt - last < interval) return 0;
  if (lastRenewal.size > 100_000) lastRenewal.clear();
  lastRenewal.set(sessionId, calledAt);
  // The clock is read once the statement holds its connection, not when the call began: on a busy
  // pool it can wait seconds for one, and a lease that lapsed meanwhile must stay lapsed.
  const renewed = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now();
    const expiresAt = new Date(now.getTime() + ctx.config.leaseTtlMs).toISOString();
    const due = new Date(now.getTime() - interval).toISOString();
    return query<{ id: string }>(tx, sql`
      with due as (
        select i.id as issue_id, l.id as lease_id from leases l
          join issues i on i.id = l.issue_id and i.lease_id = l.id
         where l.session_id = ${sessionId} and l.key_id = ${keyId} and l.ended_at is null
           and i.lease_expires_at > ${now.toISOString()}::timestamptz and l.heartbeat_at <= ${due}::timestamptz
         for update of i skip locked
      ), renewed as (
        update leases set expires_at = ${expiresAt}::timestamptz, check_at = retasc_renewed_check_at(leases.check_at, ${expiresAt}::timestamptz),
                           heartbeat_at = ${now.toISOString()}::timestamptz, renewed_by = 'calls'
          from due where leases.id = due.lease_id
      )
      update issues set lease_expires_at = ${expiresAt}::timestamptz from due where issues.id = due.issue_id returning issues.id`);
  });
  return renewed.length;
}
