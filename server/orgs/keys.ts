import { and, desc, eq, gt, isNull, or, sql } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import { agentKeys, oauthGrants, projects, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, notFound } from "../errors.ts";
import { decodeCursor, encodeCursor, fitting, pageArgs } from "../paging.ts";
import { chargeOrgAction } from "../usage/meter.ts";
import { actorOf, recordOrgActivity, requireActsOnHolder, requireRole, type ActOn } from "./access.ts";
import { runtimeSchema } from "./fields.ts";
import { lockActiveHolder, lockKeyTree, mintAgentKey } from "./mint-key.ts";

/**
 * Agent keys as a person manages them: mint, list, rotate, revoke. Members manage their
 * own keys; owners manage anyone's, admins those of ordinary members (requireActsOn: a key
 * is its holder's identity). The secret is returned once, at mint or rotation, and never again.
 */
export const mintKeyInput = z.object({
  projectId: z.string().trim().min(1).max(100).optional(),
  runtime: runtimeSchema.default("claude-code"),
  /** Mint for another member (owners; admins for ordinary members); default: the caller. */
  userId: z.string().trim().min(1).max(100).optional(),
  claimCap: z.number().int().min(1).max(1000).optional(),
  /** A CI key for the project: it attests CI results and is refused everything else (decision 045). */
  ci: z.boolean().optional(),
  /** A key for a hosted agent or CI, which never runs behind the watchdog proxy: its claim replies say what renews them. */
  hosted: z.boolean().optional(),
  /** What the holder calls it in key lists. */
  name: z.string().trim().min(1).max(60).optional(),
});
export const keyIdInput = z.object({ keyId: z.string().trim().min(1, "keyId is required").max(100) });
export const listKeysInput = z.object({ includeRevoked: z.boolean().optional(), ...pageArgs });

export interface KeyView {
  keyId: string;
  prefix: string;
  runtime: string;
  /** What its holder calls it, or null. */
  name: string | null;
  /** Minted for a hosted agent or CI: never behind a watchdog proxy. */
  hosted: boolean;
  userId: string;
  userEmail: string;
  projectId: string | null;
  projectPrefix: string | null;
  /** The OAuth client this key was approved for on the consent page (MCP sign-in); null for a secret key. */
  oauthClient: string | null;
  status: "active" | "revoked" | "expired";
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** When a session key stops working by itself; null for a key that lives until revoked. */
  expiresAt: string | null;
}

const keyAction = (doing: string, verb: string): ActOn => ({ doing: `${doing} another person's key`, verb });

export async function mintKey(ctx: Ctx, raw: z.input<typeof mintKeyInput>) {
  const input = mintKeyInput.parse(raw);
  const orgId = ctx.principal.orgId;
  return ctx.db.transaction(async (tx) => {
    const actor = await actorOf(ctx, tx);
    const userId = input.userId ?? actor.userId;
    await requireActsOnHolder(tx, actor, userId, keyAction("minting", "mint a key for"));
    // A member's own key may hold fewer claims than the default, never more: the cap is the
    // org's limit on one key, not the key holder's to raise.
    if (input.claimCap !== undefined && input.claimCap > ctx.config.CLAIM_CAP_DEFAULT) {
      requireRole(actor, ["owner", "admin"], `raising a key's claim cap above ${ctx.config.CLAIM_CAP_DEFAULT}`);
    }
    // mintAgentKey refuses a holder who is not an active member.
    const minted = await mintAgentKey(tx, {
      orgId,
      userId,
      runtime: input.runtime,
      projectId: input.projectId ?? null,
      claimCap: input.claimCap ?? null,
      ci: input.ci ?? false,
      hosted: input.hosted ?? false,
      name: input.name ?? null,
    });
    await recordOrgActivity(ctx, tx, "key.minted", { keyId: minted.keyId, runtime: input.runtime, userId, ...(input.ci ? { ci: true } : {}), ...(input.hosted ? { hosted: true } : {}) });
    await chargeOrgAction(tx, ctx, "mint_key");
    return {
      keyId: minted.keyId,
      key: minted.key,
      prefix: minted.key.slice(0, 12),
      runtime: input.runtime,
      name: input.name ?? null,
      projectId: input.projectId ?? null,
      userId,
      ...(input.ci ? { ci: true } : {}),
      ...(input.hosted ? { hosted: true } : {}),
    };
  });
}

/** Where a page of keys ends: the last key's creation (to the microsecond, as stored) and id. */
const keyPosition = z.object({ t: z.string().max(40), i: z.string().max(100) });

/**
 * Members see their own keys; owners and admins see every key in the org. Newest first, a page at
 * a time read as one keyset range (at most `limit`, and REPLY_BUDGET_BYTES), with `nextCursor`
 * while more follow.
 */
export async function listKeys(ctx: Ctx, raw: z.input<typeof listKeysInput> = {}) {
  const input = listKeysInput.parse(raw);
  const limit = input.limit ?? 200;
  const after = decodeCursor(input.cursor, keyPosition);
  const actor = await actorOf(ctx);
  const seesAll = actor.role === "owner" || actor.role === "admin";
  const now = ctx.clock.now();
  const rows = await ctx.db
    .select({
      keyId: agentKeys.id,
      prefix: agentKeys.prefix,
      runtime: agentKeys.runtime,
      name: agentKeys.name,
      hosted: agentKeys.hosted,
      userId: agentKeys.userId,
      userEmail: user.email,
      projectId: agentKeys.projectId,
      projectPrefix: projects.prefix,
      oauthClient: oauthGrants.clientName,
      createdAt: agentKeys.createdAt,
      lastUsedAt: agentKeys.lastUsedAt,
      revokedAt: agentKeys.revokedAt,
      expiresAt: agentKeys.expiresAt,
      position: sql<string>`${agentKeys.createdAt}::text`,
    })
    .from(agentKeys)
    .innerJoin(user, eq(user.id, agentKeys.userId))
    .leftJoin(projects, eq(projects.id, agentKeys.projectId))
    .leftJoin(oauthGrants, eq(oauthGrants.keyId, agentKeys.id))
    .where(
      and(
        eq(agentKeys.orgId, ctx.principal.orgId),
        seesAll ? undefined : eq(agentKeys.userId, actor.userId),
        input.includeRevoked ? undefined : and(isNull(agentKeys.revokedAt), or(isNull(agentKeys.expiresAt), gt(agentKeys.expiresAt, now))),
        after ? sql`(${agentKeys.createdAt}, ${agentKeys.id}) < (${after.t}::timestamptz, ${after.i})` : undefined,
      ),
    )
    .orderBy(desc(agentKeys.createdAt), desc(agentKeys.id))
    .limit(limit + 1);
  const views = rows.slice(0, limit).map(({ position: _position, ...r }): KeyView => ({
    ...r,
    status: r.revokedAt ? "revoked" : r.expiresAt && r.expiresAt <= now ? "expired" : "active",
    createdAt: r.createdAt.toISOString(),
    lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
    revokedAt: r.revokedAt?.toISOString() ?? null,
    expiresAt: r.expiresAt?.toISOString() ?? null,
  }));
  const keys = views.slice(0, fitting(views.map((k) => JSON.stringify(k).length)));
  const last = rows[keys.length - 1];
  return { keys, ...(rows.length > keys.length && last ? { nextCursor: encodeCursor({ t: last.position, i: last.keyId }) } : {}) };
}

async function keyInOrg(tx: Db, orgId: string, keyId: string) {
  const rows = await tx.select().from(agentKeys).where(and(eq(agentKeys.orgId, orgId), eq(agentKeys.id, keyId)));
  if (!rows[0]) throw notFound(`key ${keyId}`, "List keys with `retasc key list`.");
  return rows[0];
}

/**
 * Revokes a live key and every session key minted from it, however deep (a session key acts as
 * its parent, so it never outlives it). Returns the ids it revoked; the key itself is among
 * them unless it was revoked already.
 */
export async function revokeKeyTree(tx: Db, orgId: string, keyId: string, now: Date): Promise<string[]> {
  // First the tree's lock (a session key being minted in it commits before the walk below reads).
  await lockKeyTree(tx, orgId, keyId);
  const rows = await query<{ id: string }>(
    tx,
    sql`with recursive tree(id) as (
          select ${keyId}::text
          union
          select k.id from agent_keys k join tree on k.parent_key_id = tree.id where k.org_id = ${orgId}
        )
        update agent_keys set revoked_at = ${now.toISOString()}::timestamptz
        where org_id = ${orgId} and revoked_at is null and id in (select id from tree)
        returning id`,
  );
  return rows.map((r) => r.id);
}

/** Revokes a key (and its session keys) at once. Idempotent: revoking a revoked key changes nothing. */
export async function revokeKey(ctx: Ctx, raw: z.input<typeof keyIdInput>) {
  const { keyId } = keyIdInput.parse(raw);
  return ctx.db.transaction(async (tx) => {
    const actor = await actorOf(ctx, tx);
    const key = await keyInOrg(tx, ctx.principal.orgId, keyId);
    await requireActsOnHolder(tx, actor, key.userId, keyAction("revoking", "revoke a key of"));
    if (key.revokedAt) return { keyId, status: "revoked" as const, changed: false };
    await revokeKeyTree(tx, key.orgId, keyId, ctx.clock.now());
    await recordOrgActivity(ctx, tx, "key.revoked", { keyId, prefix: key.prefix });
    await chargeOrgAction(tx, ctx, "revoke_key");
    return { keyId, status: "revoked" as const, changed: true };
  });
}

/**
 * Replaces a live key with a new one for the same person, project, runtime and cap, and
 * revokes the old one in the same transaction. Of two concurrent rotations, one wins.
 */
export async function rotateKey(ctx: Ctx, raw: z.input<typeof keyIdInput>) {
  const { keyId } = keyIdInput.parse(raw);
  return ctx.db.transaction(async (tx) => {
    const actor = await actorOf(ctx, tx);
    const key = await keyInOrg(tx, ctx.principal.orgId, keyId);
    await requireActsOnHolder(tx, actor, key.userId, keyAction("rotating", "rotate a key of"));
    // The holder's lock before the key tree's, in the order suspension takes them.
    await lockActiveHolder(tx, key.orgId, key.userId);
    const revoked = await revokeKeyTree(tx, key.orgId, keyId, ctx.clock.now());
    if (!revoked.includes(keyId)) {
      throw new DomainError("CONFLICT", `key ${key.prefix}… is already revoked`, "Mint a new key with `retasc key mint`.");
    }
    const minted = await mintAgentKey(tx, {
      orgId: key.orgId,
      userId: key.userId,
      runtime: key.runtime,
      projectId: key.projectId,
      claimCap: key.claimCap,
    });
    await recordOrgActivity(ctx, tx, "key.rotated", { from: keyId, to: minted.keyId });
    await chargeOrgAction(tx, ctx, "rotate_key");
    return { keyId: minted.keyId, key: minted.key, prefix: minted.key.slice(0, 12), replacedKeyId: keyId, runtime: key.runtime, projectId: key.projectId };
  });
}
