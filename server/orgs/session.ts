import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { agentKeys, members, orgs, projects, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, notFound } from "../errors.ts";
import { recordOrgActivity } from "./access.ts";
import { mintAgentKey } from "./mint-key.ts";
import { pendingInvites } from "./invite-redeem.ts";
import { chargeOrgAction } from "../usage/meter.ts";

/** The calling agent's identity: the human it acts for, the org, the key's project and runtime. */
export async function whoami(ctx: Ctx) {
  const { principal, db } = ctx;
  const rows = await db
    .select({
      userId: user.id,
      email: user.email,
      name: user.name,
      role: members.role,
      orgName: orgs.name,
      timeZone: orgs.timeZone,
    })
    .from(members)
    .innerJoin(user, eq(user.id, members.userId))
    .innerJoin(orgs, eq(orgs.id, members.orgId))
    .where(and(eq(members.orgId, principal.orgId), eq(members.userId, principal.userId ?? "")));
  const row = rows[0];
  if (!row) throw notFound("your membership", "Your key no longer belongs to an active member of this org.");
  const key = principal.keyId
    ? (
        await db
          .select({ id: agentKeys.id, prefix: agentKeys.prefix, parentKeyId: agentKeys.parentKeyId, expiresAt: agentKeys.expiresAt })
          .from(agentKeys)
          .where(eq(agentKeys.id, principal.keyId))
      )[0]
    : undefined;
  const project = principal.projectId
    ? (
        await db
          .select({ id: projects.id, prefix: projects.prefix, name: projects.name })
          .from(projects)
          .where(and(eq(projects.id, principal.projectId), eq(projects.orgId, principal.orgId)))
      )[0]
    : undefined;
  return {
    kind: principal.kind,
    human: { userId: row.userId, email: row.email, name: row.name, role: row.role },
    org: { id: principal.orgId, name: row.orgName, timeZone: row.timeZone },
    project: project ?? null,
    key: key
      ? {
          id: key.id,
          prefix: key.prefix,
          runtime: principal.runtime,
          parentKeyId: key.parentKeyId,
          expiresAt: key.expiresAt?.toISOString() ?? null,
          claimCap: principal.claimCap ?? ctx.config.CLAIM_CAP_DEFAULT,
        }
      : null,
    leaseTtlSeconds: ctx.config.LEASE_TTL_SECONDS,
    // Invites of other orgs addressed to this human (accept_invite takes one, when they say yes).
    pendingInvites: await pendingInvites(ctx),
  };
}
export type WhoamiView = Awaited<ReturnType<typeof whoami>>;

export const mintSessionKeyInput = z.object({
  label: z.string().trim().min(1).max(64).optional(),
});

/**
 * Mints a key for one session of the calling agent: same human, org, project, runtime
 * and claim cap, with the caller's key as its parent. The secret is returned once. It expires
 * after SESSION_KEY_TTL_SECONDS (24 h by default), and never after the key it came from.
 * Refused for an OAuth access token (decision 037: what a grant's token mints would outlive the
 * grant), once the caller's key or any key it came from is revoked or expired (under the tree's
 * lock, so not even a mint racing the revocation outlives it), and past SESSION_KEY_CAP live
 * session keys.
 */
export async function mintSessionKey(ctx: Ctx, raw: z.input<typeof mintSessionKeyInput>) {
  const { label } = mintSessionKeyInput.parse(raw);
  const { principal } = ctx;
  if (principal.kind !== "agent" || !principal.keyId || !principal.userId || !principal.runtime) {
    throw new DomainError("FORBIDDEN", "only an agent key can mint a session key", "Call this with an agent key (rtsc_...).");
  }
  const lifetime = ctx.config.SESSION_KEY_TTL_SECONDS;
  return ctx.db.transaction(async (tx) => {
    const minted = await mintAgentKey(tx, {
      orgId: principal.orgId,
      userId: principal.userId!,
      runtime: principal.runtime!,
      projectId: principal.projectId,
      parent: { keyId: principal.keyId!, sessionKeyCap: ctx.config.SESSION_KEY_CAP, expiresAt: new Date(ctx.clock.now().getTime() + lifetime * 1000) },
      claimCap: principal.claimCap,
    });
    await recordOrgActivity(ctx, tx, "key.session_minted", { keyId: minted.keyId, ...(label ? { label } : {}) });
    await chargeOrgAction(tx, ctx, "mint_session_key");
    return {
      key: minted.key,
      keyId: minted.keyId,
      runtime: principal.runtime!,
      parentKeyId: principal.keyId!,
      projectId: principal.projectId,
      expiresAt: minted.expiresAt!.toISOString(),
    };
  });
}
