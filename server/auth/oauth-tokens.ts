import { and, eq, gt, isNull, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { agentKeys, members, oauthAccessToken, oauthGrants, orgs, projects } from "../../db/schema/index.ts";
import type { Principal } from "../context.ts";
import { sha256 } from "../crypto/index.ts";
import { agentPrincipalColumns, keyActs, keyMembership, keyOrg, keyPlaceColumns, keyProject } from "../orgs/index.ts";
import { ACCESS_TOKEN_PREFIX } from "./oauth.ts";

/** Whether a Bearer value is shaped like one of our OAuth access tokens (else: an agent key). */
export const isOAuthAccessToken = (token: string) => token.startsWith(ACCESS_TOKEN_PREFIX) && token.length <= 200;

/**
 * Resolves an OAuth access token presented at `/mcp` to the principal of the agent key its grant
 * minted, or null. One statement checks, on every call: the token's digest, that it is neither
 * revoked nor expired, that it was issued for this `/mcp` (its audience, RFC 8707), that its
 * grant's key is live, and that the person is an active member. So revoking the token (RFC 7009),
 * revoking the key on the Keys page, and suspending the person each stop it at once.
 */
export async function authenticateOAuthToken(db: Db, token: string, resource: string, now: Date): Promise<Principal | null> {
  if (!isOAuthAccessToken(token)) return null;
  let statement = lookups.get(db);
  if (!statement) lookups.set(db, (statement = tokenLookup(db)));
  // The prefix is not part of what the provider stores.
  const tokenHash = sha256(token.slice(ACCESS_TOKEN_PREFIX.length));
  const row = (await statement.execute({ tokenHash, resource, now: now.toISOString() }))[0];
  return row ? { kind: "agent", ...row } : null;
}

const lookups = new WeakMap<Db, ReturnType<typeof tokenLookup>>();

function tokenLookup(db: Db) {
  return db
    .select({ ...agentPrincipalColumns, ...keyPlaceColumns })
    .from(oauthAccessToken)
    .innerJoin(oauthGrants, and(eq(oauthGrants.keyId, oauthAccessToken.referenceId), eq(oauthGrants.clientId, oauthAccessToken.clientId)))
    .innerJoin(agentKeys, and(eq(agentKeys.id, oauthGrants.keyId), eq(agentKeys.userId, oauthAccessToken.userId)))
    .innerJoin(members, keyMembership)
    .innerJoin(orgs, keyOrg)
    .leftJoin(projects, keyProject)
    .where(
      and(
        eq(oauthAccessToken.token, sql.placeholder("tokenHash")),
        isNull(oauthAccessToken.revoked),
        gt(oauthAccessToken.expiresAt, sql`${sql.placeholder("now")}::timestamptz`),
        sql`${sql.placeholder("resource")}::text = any(${oauthAccessToken.resources})`,
        keyActs,
      ),
    )
    .prepare("authenticate_oauth_token");
}
