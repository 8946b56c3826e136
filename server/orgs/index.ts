import crypto from "node:crypto";
import { and, eq, gt, isNull, lt, or, sql } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import { account, agentKeys, members, orgs, projects, user } from "../../db/schema/index.ts";
import type { Principal, Services } from "../context.ts";
import { randomToken, sha256 } from "../crypto/index.ts";
import { DomainError, forbidden, invalidInput, notFound } from "../errors.ts";
import { grantSignupCredit } from "../usage/credit.ts";
import { cachedPrincipal, keepPrincipal } from "./key-cache.ts";
import { memberProjectIds, projectReach, reachable, type Reach } from "./scope.ts";

export const newId = () => crypto.randomUUID();

export const prefixSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z][A-Za-z0-9]{1,9}$/, "a prefix is 2-10 letters or digits, starting with a letter")
  .transform((p) => p.toUpperCase());
export const emailSchema = z.email("must be an email address").trim().toLowerCase();
export const runtimeSchema = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._:-]+$/, "a runtime label is letters, digits and . _ : -");

/**
 * Finds the person with this email, creating them if needed, for the operator commands (which
 * vouch for the address: the person they create is marked verified). An existing account is
 * used only when its address is proven: verified by the OAuth provider it signed up with, or
 * made by an operator command and never given a sign-in since. An email + password sign-up
 * proves nothing (better-auth records it unverified), so it is refused: whoever signed up
 * first with the address would otherwise be handed the operator's org.
 */
export async function ensureUser(db: Db, email: string, name?: string): Promise<string> {
  const normalized = emailSchema.parse(email);
  await db
    .insert(user)
    .values({ id: newId(), email: normalized, name: name ?? normalized.split("@")[0]!, emailVerified: true })
    .onConflictDoNothing();
  const [row] = await db
    .select({ id: user.id, emailVerified: user.emailVerified, signIns: sql<number>`(select count(*)::int from ${account} a where a.user_id = ${user}.id)` })
    .from(user)
    .where(eq(user.email, normalized));
  if (!row!.emailVerified && row!.signIns > 0) {
    throw new DomainError(
      "FORBIDDEN",
      `${normalized} has an account whose email is not verified, so it may not be theirs`,
      "If the account is theirs, they sign in and create the org in the Dash (/dash/orgs/new) or redeem an invite; otherwise use another email.",
      { reason: "email_unverified" },
    );
  }
  return row!.id;
}

export async function createOrg(
  services: Pick<Services, "keyring"> & Partial<Pick<Services, "config" | "clock">>,
  db: Db,
  input: { name: string; ownerUserId: string; timeZone?: string },
): Promise<string> {
  const name = z.string().trim().min(1).max(100).parse(input.name);
  const timeZone = input.timeZone ?? "UTC";
  if (!isTimeZone(timeZone)) throw invalidInput(`unknown time zone ${timeZone}`, "Use an IANA name such as Europe/Berlin.");
  const id = newId();
  await db.insert(orgs).values({ id, name, timeZone });
  await services.keyring.createOrgKey(db, id);
  await db.insert(members).values({ id: newId(), orgId: id, userId: input.ownerUserId, role: "owner" });
  await grantSignupCredit(db, services, id, input.ownerUserId);
  return id;
}

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The project a prefix names in an org: its current prefix, or one it had before a rename (decision 089). */
export const projectNamedBy = (orgId: string, prefix: string) =>
  or(eq(projects.prefix, prefix), sql`${projects.id} in (select project_id from project_prefix_aliases where org_id = ${orgId} and prefix = ${prefix})`)!;

/**
 * Refuses a prefix another project of the org has, now or before a rename (decision 089): an old
 * prefix still names that project's issues (`OLD-42`), so it is never given to another project.
 * `projectId`: the project asking, which may take back a prefix of its own.
 */
export async function requirePrefixFree(db: Db, orgId: string, prefix: string, projectId: string | null): Promise<void> {
  const rows = await query<{ project_id: string; current: string; old: boolean }>(
    db,
    sql`select id as project_id, prefix as current, false as old from projects where org_id = ${orgId} and prefix = ${prefix}
        union all
        select p.id, p.prefix, true from project_prefix_aliases a join projects p on p.id = a.project_id
         where a.org_id = ${orgId} and a.prefix = ${prefix}`,
  );
  const other = rows.find((r) => r.project_id !== projectId);
  if (!other) return;
  if (!other.old) {
    throw new DomainError("CONFLICT", `prefix ${prefix} is already used in this org`, "Pick another prefix.", { reason: "prefix_in_use", prefix, project: other.current });
  }
  throw new DomainError(
    "CONFLICT",
    `prefix ${prefix} is an old prefix of project ${other.current}: ${prefix}-1, ${prefix}-2, … still name its issues`,
    "Pick another prefix; an old prefix stays with the project that had it.",
    { reason: "prefix_is_old", prefix, project: other.current },
  );
}

/** A unique violation on a project's prefix (two writers took it at once): the refusal requirePrefixFree gives. */
export function prefixRaceRefusal(error: unknown, prefix: string): DomainError | null {
  const codeOf = (e: unknown) => (e && typeof e === "object" && "code" in e ? String((e as { code: unknown }).code) : "");
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (codeOf(error) !== "23505" && codeOf(cause) !== "23505") return null;
  return new DomainError("CONFLICT", `prefix ${prefix} is already used in this org`, "Pick another prefix.", { reason: "prefix_in_use", prefix });
}

export async function createProject(
  db: Db,
  input: { orgId: string; name: string; prefix: string },
): Promise<{ id: string; prefix: string }> {
  const prefix = prefixSchema.parse(input.prefix);
  const name = z.string().trim().min(1).max(100).parse(input.name);
  await requirePrefixFree(db, input.orgId, prefix, null);
  const id = newId();
  await db.insert(projects).values({ id, orgId: input.orgId, name, prefix });
  return { id, prefix };
}

export async function ensureMember(db: Db, orgId: string, userId: string, role: "owner" | "admin" | "member" = "member") {
  await db.insert(members).values({ id: newId(), orgId, userId, role }).onConflictDoNothing();
}

/**
 * Locks the holder's membership (FOR SHARE) and refuses one who is not an active member.
 * Suspension updates that row before it retires the person's keys, so a key minted at the same
 * time is either refused here or committed before the retirement looks for keys: it never
 * outlives the suspension. Callers that go on to lock keys take this lock first (deadlock order).
 * Returns what the holder reaches (their project scope, ./scope.ts).
 */
export async function lockActiveHolder(db: Db, orgId: string, userId: string): Promise<Reach> {
  const rows = await db
    .select({ status: members.status, projectIds: memberProjectIds })
    .from(members)
    .where(and(eq(members.orgId, orgId), eq(members.userId, userId)))
    .for("share");
  if (!rows[0]) throw notFound(`member ${userId}`, "Keys are minted for people in the org.");
  if (rows[0].status !== "active") {
    throw forbidden("that member is suspended; their agents cannot hold keys", "Reactivate the member first.");
  }
  return { orgId, projectIds: rows[0].projectIds };
}

/**
 * Locks a key tree: the root key (no parent) that `keyId` was minted from, however deep, or
 * `keyId` itself when it is a root. Minting a session key and revoking any key of a tree both
 * take this lock first, so they never interleave: a revocation's walk, which starts after the
 * lock, sees every session key committed before it, and a mint after it sees the revocation.
 * FOR NO KEY UPDATE, so it waits for no reader.
 */
export async function lockKeyTree(db: Db, orgId: string, keyId: string): Promise<void> {
  await query(
    db,
    sql`with recursive up(id, parent_key_id) as (
          select id, parent_key_id from agent_keys where id = ${keyId} and org_id = ${orgId}
          union all
          select k.id, k.parent_key_id from agent_keys k join up on k.id = up.parent_key_id where k.org_id = ${orgId}
        )
        select k.id from agent_keys k where k.org_id = ${orgId} and k.id in (select id from up where parent_key_id is null)
        for no key update of k`,
  );
}

/**
 * Under the tree lock: refuses a parent that is revoked, expired or minted from a revoked or
 * expired key; a tree whose root is an OAuth grant's key (its secret was never shown, so any
 * mint in it comes through a token: decision 037); and a tree that already holds `cap` live
 * session keys (each has the claim cap of its parent, so an unbounded number would multiply it).
 * Returns when the parent's line ends (the earliest expiry above it), or null when it never does.
 */
async function requireLiveParent(db: Db, orgId: string, parentKeyId: string, cap: number): Promise<Date | null> {
  await lockKeyTree(db, orgId, parentKeyId);
  // A new statement after the lock: it sees whatever the revocation or mint before us committed.
  const [state] = await query<{ found: number; revoked: number; expired: number; granted: number; live: number; ends: string | Date | null }>(
    db,
    sql`with recursive up(id, parent_key_id, revoked_at, expires_at) as (
          select id, parent_key_id, revoked_at, expires_at from agent_keys where id = ${parentKeyId} and org_id = ${orgId}
          union all
          select k.id, k.parent_key_id, k.revoked_at, k.expires_at from agent_keys k join up on k.id = up.parent_key_id where k.org_id = ${orgId}
        ),
        down(id) as (
          select id from up where parent_key_id is null
          union
          select k.id from agent_keys k join down on k.parent_key_id = down.id where k.org_id = ${orgId}
        )
        select (select count(*) from up)::int as found,
               (select count(*) from up where revoked_at is not null)::int as revoked,
               (select count(*) from up where expires_at <= now())::int as expired,
               (select count(*) from oauth_grants g join up on g.key_id = up.id)::int as granted,
               (select count(*) from agent_keys k join down on k.id = down.id
                 where k.parent_key_id is not null and k.revoked_at is null and (k.expires_at is null or k.expires_at > now()))::int as live,
               (select min(expires_at) from up) as ends`,
  );
  if (state && state.granted > 0) {
    throw new DomainError(
      "FORBIDDEN",
      "an OAuth access token cannot mint session keys: a key minted from it would outlive the token and its grant",
      "Use the token itself in every session: sessions sharing it are told apart by their Mcp-Session-Id. Agent keys come from `retasc bind` or the Dash.",
    );
  }
  if (!state || state.found === 0 || state.revoked > 0) {
    throw new DomainError("UNAUTHORIZED", "this key was revoked", "Ask your human for a new key; session keys end with the key they came from.");
  }
  if (state.expired > 0) {
    throw new DomainError("UNAUTHORIZED", "this key has expired", "Mint session keys from a live key; a session key ends when the key it came from does.");
  }
  if (state.live >= cap) {
    throw new DomainError(
      "SESSION_KEY_CAP",
      `this key already has ${state.live} live session keys (the cap is ${cap})`,
      "Retire session keys you no longer use (retire_member with their memberId, from list_members), or ask the operator to raise SESSION_KEY_CAP.",
      { live: state.live, cap },
    );
  }
  return state.ends === null ? null : new Date(state.ends);
}

/**
 * Mints an agent key for an active member. The secret is returned once; only its SHA-256 is
 * stored. A session key names its parent, the cap of live session keys per tree and when it
 * should expire; it expires then or when its parent's line does, whichever is first.
 */
export async function mintAgentKey(
  db: Db,
  input: {
    orgId: string;
    userId: string;
    runtime: string;
    projectId?: string | null;
    parent?: { keyId: string; sessionKeyCap: number; expiresAt: Date };
    claimCap?: number | null;
    /** A CI key (`rtci_…`): attests verification for its project, and only that (decision 045). */
    ci?: boolean;
    /** Never behind a watchdog proxy (a hosted agent, CI): its claim replies say what renews them. */
    hosted?: boolean;
    name?: string | null;
  },
): Promise<{ keyId: string; key: string; expiresAt: Date | null }> {
  const runtime = runtimeSchema.parse(input.runtime);
  const holder = await lockActiveHolder(db, input.orgId, input.userId);
  let expiresAt: Date | null = null;
  if (input.parent) {
    const ends = await requireLiveParent(db, input.orgId, input.parent.keyId, input.parent.sessionKeyCap);
    expiresAt = ends && ends < input.parent.expiresAt ? ends : input.parent.expiresAt;
  }
  if (input.projectId) {
    // A key is bound only to a project its holder reaches.
    const project = await db
      .select({ id: projects.id })
      .from(projects)
      .where(and(eq(projects.id, input.projectId), reachable(holder, projectReach)));
    if (!project[0]) throw notFound("project");
  }
  if (input.ci && !input.projectId) throw invalidInput("a CI key attests for one project", "Pass the project's id (--project-id).");
  const key = randomToken(input.ci ? CI_KEY_PREFIX : "rtsc_", 32);
  const keyId = newId();
  await db.insert(agentKeys).values({
    id: keyId,
    orgId: input.orgId,
    userId: input.userId,
    projectId: input.projectId ?? null,
    runtime,
    keyHash: sha256(key),
    prefix: key.slice(0, 12),
    parentKeyId: input.parent?.keyId ?? null,
    claimCap: input.claimCap ?? null,
    expiresAt,
    ci: input.ci ?? false,
    hosted: input.hosted ?? false,
    name: input.name ?? null,
  });
  return { keyId, key, expiresAt };
}

/** What a CI key starts with: no door but the attestation takes it (authenticateAgentKey wants rtsc_). */
export const CI_KEY_PREFIX = "rtci_";

/** Resolves a presented CI key to its principal (always with its project), or null. */
export async function authenticateCiKey(db: Db, secret: string): Promise<(Principal & { projectId: string }) | null> {
  if (!secret.startsWith(CI_KEY_PREFIX) || secret.length > 200) return null;
  const [row] = await db
    .select(agentPrincipalColumns)
    .from(agentKeys)
    .innerJoin(members, keyMembership)
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
export const keyPlaceColumns = { orgName: orgs.name, projectName: projects.name, projectPrefix: projects.prefix };
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

/** Deletes an org and destroys its data key first, so nothing left anywhere can be read. */
export async function deleteOrg(services: Pick<Services, "keyring">, db: Db, orgId: string): Promise<void> {
  await services.keyring.shredOrg(db, orgId);
  await db.delete(orgs).where(eq(orgs.id, orgId));
}
