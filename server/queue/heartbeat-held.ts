import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { DomainError } from "../errors.ts";
import { sha256 } from "../crypto/index.ts";
import { billingEnabled, chargeNow } from "../usage/meter.ts";

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
 * the activity as beat-log.ts says (a run of beats is one row, decision 105),
 * the row lock taken by the update as the general path's FOR UPDATE takes it. With billing on,
 * the charge joins it in one transaction. Returns null, having written nothing, for anything
 * else (no token, a lapsed or another lease, a member scoped to projects, a refused charge): the
 * general path (`heartbeat` in lease.ts) then renews by session or answers with the right refusal.
 */
export async function heartbeatHeld(ctx: Ctx, identifier: string, claimToken: string) {
  const { principal } = ctx;
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
            update leases set expires_at = ${expiresAt.toISOString()}::timestamptz, heartbeat_at = ${now.toISOString()}::timestamptz, renewed_by = 'heartbeat'
             where org_id = ${principal.orgId} and id = (select lease_id from renewed)
          ), last as (
            select id, kind, actor_id, key_id, runtime, detail_enc, facts from activity
             where org_id = ${principal.orgId} and issue_id = (select id from renewed)
             order by id desc limit 1
          ), extended as (
            update activity a set facts = jsonb_build_object('fence', l.facts->'fence', 'beats', coalesce((l.facts->>'beats')::int, 1) + 1, 'lastAt', ${now.toISOString()}::text)
              from last l
             where a.org_id = ${principal.orgId} and a.id = l.id and l.kind = 'heartbeat' and l.detail_enc is null
               and l.facts->'fence' = (select to_jsonb(fence) from renewed) and l.actor_id is not distinct from ${principal.userId}
               and l.key_id is not distinct from ${principal.keyId} and l.runtime is not distinct from ${principal.runtime}
            returning a.id
          ), logged as (
            insert into activity (org_id, issue_id, kind, actor_id, key_id, runtime, facts, created_at)
            select ${principal.orgId}, id, 'heartbeat', ${principal.userId}, ${principal.keyId}, ${principal.runtime}, jsonb_build_object('fence', fence), ${now.toISOString()}::timestamptz
              from renewed where not exists (select 1 from extended)
          )
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
