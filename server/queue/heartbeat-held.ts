import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { DomainError } from "../errors.ts";
import { sha256 } from "../crypto/index.ts";
import { refuseWhileFrozen } from "../orgs/freeze.ts";
import { billingEnabled, chargeNow } from "../usage/meter.ts";
import { beatSteps } from "./beat-log.ts";

interface Renewed {
  id: string;
  identifier: string;
  fence: number;
}

/** Refusals of the charge: the general path charges again and answers with them, after its own checks. */
const chargeRefusals = new Set(["BILLING_INACTIVE", "SPEND_CAP"]);

/**
 * A heartbeat on a live claim by its token, in one statement (decision 072): the issue's lease
 * expiry, the lease and the activity are written together when the token is the live lease's,
 * the activity by beat-log.ts's steps (`beatSteps`: a run of beats is one row, decision 105),
 * the row lock taken by the update as the general path's FOR UPDATE takes it. With billing on,
 * the charge joins it in one transaction. Returns null, having written nothing, for anything
 * else (no token, a lapsed or another lease, a member scoped to projects, a refused charge): the
 * general path (`heartbeat` in lease.ts) then renews by session or answers with the right refusal.
 */
export async function heartbeatHeld(ctx: Ctx, identifier: string, claimToken: string) {
  const { principal } = ctx;
  // A frozen org's heartbeat is refused, not renewed: the renewal would be lost on the move (decision 110).
  refuseWhileFrozen(principal);
  // Scoped members take the general path, whose lookup holds their scope (decision 042).
  if (principal.projectIds !== null) return null;
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + ctx.config.leaseTtlMs);
  const renew = (db: Db) =>
    query<Renewed>(
      db,
      sql`with renewed as (
            update issues set lease_expires_at = ${expiresAt.toISOString()}::timestamptz
             where org_id = ${principal.orgId} and identifier = retasc_identifier(${principal.orgId}, ${identifier}) and lease_id is not null
               and lease_expires_at > ${now.toISOString()}::timestamptz and lease_token_hash = ${sha256(claimToken)}
            returning id, identifier, fence, lease_id
          ), lease as (
            update leases set expires_at = ${expiresAt.toISOString()}::timestamptz, check_at = retasc_renewed_check_at(check_at, ${expiresAt.toISOString()}::timestamptz),
                   heartbeat_at = ${now.toISOString()}::timestamptz, renewed_by = 'heartbeat'
             where org_id = ${principal.orgId} and id = (select lease_id from renewed)
          ), ${beatSteps(principal, now)}
          select id, identifier, fence from renewed`,
    );
  let renewed: Renewed | undefined;
  if (!billingEnabled(ctx.config) || principal.kind === "system") {
    [renewed] = await renew(ctx.db);
  } else {
    try {
      renewed = await ctx.db.transaction(async (tx) => {
        const [row] = await renew(tx);
        if (row) await chargeNow(tx, ctx, { tool: "heartbeat", tier: "heartbeat", issueId: row.id }, now);
        return row;
      });
    } catch (error) {
      if (error instanceof DomainError && chargeRefusals.has(error.code)) return null;
      throw error;
    }
  }
  if (!renewed) return null;
  // Outside any transaction, the notice goes out at once (after the statement's commit).
  await ctx.events.publish(ctx.db, { orgId: principal.orgId, kind: "claim.renewed", issueId: renewed.id, identifier: renewed.identifier });
  return { identifier: renewed.identifier, expiresAt: expiresAt.toISOString(), fence: Number(renewed.fence) };
}
