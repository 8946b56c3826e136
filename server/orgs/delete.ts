import { eq, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import { orgs } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { forbidden, invalidInput, notFound } from "../errors.ts";
import { transactionWithNotices } from "../events/index.ts";
import { enqueue } from "../outbox/index.ts";
import { actorOf, requireRole } from "./access.ts";
import { refuseWhileFrozen } from "./freeze.ts";
import { forgetCachedKeys } from "./key-cache.ts";

export const deleteOrgInput = z.object({
  /** The org's name as the person typed it; operators (the system principal) need none. */
  confirmName: z.string().max(200).optional(),
});

export interface DeletedOrg {
  orgId: string;
  name: string;
  keysRevoked: number;
  membersRemoved: number;
  jobsCanceled: number;
  connectorsStopped: number;
  /** The outbox job that removes the org's rows in batches (server/orgs/purge.ts). */
  purgeJobId: number;
}

/** The label a job canceled by an org's deletion carries in `outbox.last_error`. */
export const ORG_DELETED = "ORG_DELETED";

/**
 * Deletes the caller's org: the owner's act (an operator acts as one), in one short transaction
 * that destroys the org's wrapped data keys first, so nothing it left (rows, backups, job
 * payloads) can be decrypted even with the master key, then revokes every agent key and OAuth
 * token, removes the memberships, invites and setup codes (every session in the org reads
 * NOT_FOUND at its next request, and the Dash moves to another org), cancels its jobs and stops
 * its connectors. The rows themselves go in the background (`org.purge`), in batches, so a large
 * org holds no long lock. An org without a data key is a deleted one (`requireLiveOrg`).
 */
export async function deleteOrg(ctx: Ctx, raw: z.input<typeof deleteOrgInput>): Promise<DeletedOrg> {
  // An owner's delete of a frozen org waits for the move; the operator's (system) purges the source's copy after it (decision 110).
  refuseWhileFrozen(ctx.principal);
  const input = deleteOrgInput.parse(raw);
  const { principal } = ctx;
  if (principal.kind === "agent") {
    throw forbidden("an agent cannot delete an org", "The owner deletes it in the Dash (Settings › Delete org) or with `retasc org delete`.");
  }
  const orgId = principal.orgId;
  return transactionWithNotices(ctx.db, async (tx) => {
    // The org row locked first: two deletions of one org run one after the other.
    const [org] = await tx.select({ id: orgs.id, name: orgs.name }).from(orgs).where(eq(orgs.id, orgId)).for("update");
    if (!org || !(await hasDataKey(tx, orgId))) throw notFound("org");
    const actor = await actorOf(ctx, tx);
    requireRole(actor, ["owner"], "deleting the org");
    if (principal.kind !== "system" && input.confirmName?.trim() !== org.name) {
      throw invalidInput(`type the org's name exactly to delete it (${org.name})`, "Nothing was deleted. Export it first if you may want it back.");
    }
    await ctx.keyring.shredOrg(tx, orgId);
    const keysRevoked = await count(
      tx,
      sql`update agent_keys set revoked_at = now() where org_id = ${orgId} and revoked_at is null returning 1`,
    );
    forgetCachedKeys();
    // OAuth tokens of the org's grants: revoked too, not only unusable through their revoked key.
    await tx.execute(sql`update oauth_access_token set revoked = now()
      where revoked is null and reference_id in (select id from agent_keys where org_id = ${orgId})`);
    await tx.execute(sql`update oauth_refresh_token set revoked = now()
      where revoked is null and reference_id in (select id from agent_keys where org_id = ${orgId})`);
    const membersRemoved = await count(tx, sql`delete from members where org_id = ${orgId} returning 1`);
    await tx.execute(sql`delete from invites where org_id = ${orgId}`);
    await tx.execute(sql`delete from setup_codes where org_id = ${orgId}`);
    const jobsCanceled = await count(
      tx,
      sql`update outbox set failed_at = now(), locked_until = null, last_error = ${ORG_DELETED}
          where org_id = ${orgId} and completed_at is null and failed_at is null returning 1`,
    );
    const connectorsStopped = await count(
      tx,
      sql`update connectors set revoked_at = now() where org_id = ${orgId} and revoked_at is null returning 1`,
    );
    // Notifications stop: no channel of the org is left to send to, the Slack bot token included.
    for (const table of ["notify_bindings", "notify_codes", "notify_mutes", "notify_slack_installs"]) {
      await tx.execute(sql`delete from ${sql.identifier(table)} where org_id = ${orgId}`);
    }
    const purgeJobId = await enqueue(tx, "org.purge", { orgId });
    return { orgId, name: org.name, keysRevoked, membersRemoved, jobsCanceled, connectorsStopped, purgeJobId };
  });
}

/** NOT_FOUND for an org that does not exist or was deleted (its data key is gone). */
export async function requireLiveOrg(db: Db, orgId: string): Promise<void> {
  if (!(await hasDataKey(db, orgId))) throw notFound(`org ${orgId}`, "Pass the orgId printed by bootstrap.");
}

async function hasDataKey(db: Db, orgId: string): Promise<boolean> {
  return (await count(db, sql`select 1 from org_keys where org_id = ${orgId} limit 1`)) > 0;
}

async function count(db: Db, statement: SQL): Promise<number> {
  return (await query(db, statement)).length;
}
