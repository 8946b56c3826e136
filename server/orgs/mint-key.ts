/**
 * Minting an agent key: under its holder's membership lock (a suspension waits for it or is
 * seen by it) and, for a session key, its tree's lock (a revocation waits for it or is seen by it).
 */
import { and, eq, sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { agentKeys, members, projects } from "../../db/schema/index.ts";
import { randomToken, sha256 } from "../crypto/index.ts";
import { DomainError, forbidden, invalidInput, notFound } from "../errors.ts";
import { newId, runtimeSchema } from "./fields.ts";
import { CI_KEY_PREFIX } from "./key-auth.ts";
import { memberProjectIds, projectReach, reachable, type Reach } from "./scope.ts";

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
