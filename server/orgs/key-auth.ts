/**
 * What a presented key resolves to: an agent key (`rtsc_`) or a CI key (`rtci_`) to its principal,
 * and the columns and joins every credential that acts as a key reads its principal through.
 */
import { and, eq, gt, isNull, lt, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { agentKeys, members, orgs, projects } from "../../db/schema/index.ts";
import type { Principal } from "../context.ts";
import { sha256 } from "../crypto/index.ts";
import { cachedPrincipal, keepPrincipal } from "./key-cache.ts";
import { memberProjectIds } from "./scope.ts";
import { orgFrozenColumn } from "./freeze.ts";

/** What a CI key starts with: no door but the attestation takes it (authenticateAgentKey wants rtsc_). */
export const CI_KEY_PREFIX = "rtci_";

/** Resolves a presented CI key to its principal (always with its project), or null. */
export async function authenticateCiKey(db: Db, secret: string): Promise<(Principal & { projectId: string }) | null> {
  if (!secret.startsWith(CI_KEY_PREFIX) || secret.length > 200) return null;
  const [row] = await db
    .select({ ...agentPrincipalColumns, orgFrozen: keyPlaceColumns.orgFrozen })
    .from(agentKeys)
    .innerJoin(members, keyMembership)
    .innerJoin(orgs, keyOrg)
    .where(and(eq(agentKeys.keyHash, sha256(secret)), eq(agentKeys.ci, true), keyActs));
  if (!row?.projectId) return null;
  return { kind: "agent", ...row, projectId: row.projectId };
}

/** The agent key an `Authorization: Bearer <key>` header presents, or null. */
export function bearerKeyOf(authorization: string | null | undefined): string | null {
  const match = /^bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  return match ? match[1]! : null;
}

/**
 * Resolves a presented agent key to its principal, or null. Revoked and expired keys and keys
 * of suspended members stop working at once: all are checked on every call, in one statement
 * built once per database (building it again was most of the CPU an MCP request's
 * authentication cost).
 */
export async function authenticateAgentKey(db: Db, secret: string): Promise<Principal | null> {
  return isAgentKeyShaped(secret) ? lookUpKey(db, sha256(secret)) : null;
}

/**
 * The /mcp door's key lookup: a principal read within the last KEY_CACHE_MS is used again
 * (./key-cache.ts), so an agent's calls in a burst share one lookup. A miss is never kept: a key
 * minted a moment ago works at once, and garbage presented as keys takes no room.
 */
export async function authenticateAgentKeyCached(db: Db, secret: string, nowMs: number): Promise<Principal | null> {
  if (!isAgentKeyShaped(secret)) return null;
  const keyHash = sha256(secret);
  const hit = cachedPrincipal(keyHash, nowMs);
  if (hit) return hit;
  const principal = await lookUpKey(db, keyHash);
  if (principal) keepPrincipal(keyHash, principal, nowMs);
  return principal;
}

/** Only what could be a key is hashed and looked up. */
const isAgentKeyShaped = (secret: string) => secret.startsWith("rtsc_") && secret.length <= 200;

async function lookUpKey(db: Db, keyHash: string): Promise<Principal | null> {
  let statement = keyLookups.get(db);
  if (!statement) keyLookups.set(db, (statement = keyLookup(db)));
  const row = (await statement.execute({ keyHash }))[0];
  if (!row) return null;
  return { kind: "agent", ...row };
}

const keyLookups = new WeakMap<Db, ReturnType<typeof keyLookup>>();

/** What an agent principal is read from: its key's row (every credential that acts as a key selects these). */
export const agentPrincipalColumns = {
  keyId: agentKeys.id,
  orgId: agentKeys.orgId,
  userId: agentKeys.userId,
  projectId: agentKeys.projectId,
  /** The person's project scope: their agents inherit it (./scope.ts). */
  projectIds: memberProjectIds,
  runtime: agentKeys.runtime,
  claimCap: agentKeys.claimCap,
  riderWaiting: agentKeys.riderWaiting,
  hosted: agentKeys.hosted,
};
/** The membership a key acts through: joined on the key's org and person. */
export const keyMembership = and(eq(members.orgId, agentKeys.orgId), eq(members.userId, agentKeys.userId));
/**
 * What a key's writes over MCP say they landed in (server/mcp/footer.ts): its org's name and its
 * project's, read with the key (joinKeyPlace), so naming them costs no statement.
 */
export const keyPlaceColumns = {
  orgName: orgs.name,
  projectName: projects.name,
  projectPrefix: projects.prefix,
  /** The org's freeze (./freeze.ts), read with the key so that checking it costs no statement. */
  orgFrozen: orgFrozenColumn,
};
/** The org and project rows keyPlaceColumns reads, joined to a query of agent keys. */
export const keyOrg = eq(orgs.id, agentKeys.orgId);
export const keyProject = eq(projects.id, agentKeys.projectId);
/** A key acts only while it is live (neither revoked nor expired) and its person an active member. */
export const keyActs = and(isNull(agentKeys.revokedAt), or(isNull(agentKeys.expiresAt), gt(agentKeys.expiresAt, sql`now()`)), eq(members.status, "active"));

function keyLookup(db: Db) {
  return db
    .select({ ...agentPrincipalColumns, ...keyPlaceColumns })
    .from(agentKeys)
    .innerJoin(members, keyMembership)
    .innerJoin(orgs, keyOrg)
    .leftJoin(projects, keyProject)
    .where(and(eq(agentKeys.keyHash, sql.placeholder("keyHash")), eq(agentKeys.ci, false), keyActs))
    .prepare("authenticate_agent_key");
}

export async function touchKey(db: Db, keyId: string, now: Date): Promise<void> {
  await db
    .update(agentKeys)
    .set({ lastUsedAt: now })
    .where(
      and(
        eq(agentKeys.id, keyId),
        or(isNull(agentKeys.lastUsedAt), lt(agentKeys.lastUsedAt, new Date(now.getTime() - 60_000))),
      ),
    );
}
