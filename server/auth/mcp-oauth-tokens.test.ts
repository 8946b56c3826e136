import path from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { openPglite, type Database } from "../../db/client.ts";
import { oauthAccessToken, oauthRefreshToken } from "../../db/schema/index.ts";
import { sha256 } from "../crypto/index.ts";
import type { MemoryOAuthClient } from "../testing/oauth-client.ts";
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX } from "./oauth.ts";
import { call, oauthApp, type Person } from "./testing/mcp-oauth.ts";

/**
 * An MCP client's OAuth tokens after sign-in (mcp-oauth.test.ts), against the built app over HTTP
 * with the MCP SDK's `auth()`: refresh, revocation (RFC 7009) of an access or a refresh token,
 * the grant's key revoked, the approving member suspended, and how tokens are stored.
 */

const world = oauthApp();
const { app, signUp, cliPost, signIn, connect, mcpStatus } = world;

describe("MCP OAuth sign-in", () => {
  let alice: Person;
  let bob: Person;
  /** Alice's client, signed in to her org and project: refreshed, then its grant's key revoked. */
  let provider: MemoryOAuthClient;
  beforeAll(async () => {
    [alice, bob] = await Promise.all([signUp("alice", "ALI"), signUp("bob", "BOB")]);
    provider = await signIn(alice, `${alice.orgId}|${alice.projectId}`);
  });

  test("refresh: a new access token works; revocation (RFC 7009) stops the revoked one at once", async () => {
    const before = provider.saved!;
    expect(await auth(provider, { serverUrl: `${app.url}/mcp` })).toBe("AUTHORIZED");
    const after = provider.saved!;
    expect(after.access_token).not.toBe(before.access_token);
    expect(await mcpStatus(after.access_token)).toBe(200);

    const revoked = await fetch(`${app.url}/api/auth/oauth2/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: after.access_token, token_type_hint: "access_token", client_id: provider.info!.client_id }),
    });
    expect(revoked.status).toBe(200);
    expect(await mcpStatus(after.access_token)).toBe(401);
  });

  test("revoking the grant's key on the Keys page ends every token of the grant", async () => {
    expect(await auth(provider, { serverUrl: `${app.url}/mcp` })).toBe("AUTHORIZED");
    const token = provider.saved!.access_token;
    expect(await mcpStatus(token)).toBe(200);
    const keys = await fetch(`${app.url}/api/cli/keys?orgId=${alice.orgId}`, { headers: { authorization: `Bearer ${alice.token}` } }).then((r) => r.json());
    const revoke = await fetch(`${app.url}/api/cli/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${alice.token}`, "content-type": "application/json" },
      body: JSON.stringify({ orgId: alice.orgId, action: "revoke", keyId: keys.keys[0].keyId }),
    });
    expect(revoke.status).toBe(200);
    expect(await mcpStatus(token)).toBe(401);
  });
  test("a token acts with the approving member's role, and stops at once when they are suspended", async () => {
    const invite = await cliPost(alice.token, "members", { orgId: alice.orgId, action: "invite" });
    await cliPost(bob.token, "join", { code: invite.code });
    const bobs = await signIn(bob, `${alice.orgId}|`);
    const client = await connect(bobs);
    expect(await call(client, "whoami")).toMatchObject({ kind: "agent", org: { id: alice.orgId }, human: { role: "member" } });
    await client.close();
    const token = bobs.saved!.access_token;
    expect(await mcpStatus(token)).toBe(200);
    const listing = await fetch(`${app.url}/api/cli/members?orgId=${alice.orgId}`, { headers: { authorization: `Bearer ${alice.token}` } }).then((r) => r.json());
    const member = (listing.members as { kind: string; role?: string; memberId: string }[]).find((m) => m.kind === "human" && m.role === "member")!;
    await cliPost(alice.token, "members", { orgId: alice.orgId, action: "suspend", memberId: member.memberId });
    expect(await mcpStatus(token)).toBe(401);
  });

  test("revoking a refresh token (RFC 7009) ends the access token issued with it at once, and it refreshes nothing more", async () => {
    // A sign-in of its own: the grant's tokens are what came from this refresh token.
    const own = await signIn(alice, `${alice.orgId}|${alice.projectId}`);
    const { access_token, refresh_token } = own.saved!;
    expect(await mcpStatus(access_token)).toBe(200);
    const revoked = await fetch(`${app.url}/api/auth/oauth2/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: refresh_token!, token_type_hint: "refresh_token", client_id: own.info!.client_id }),
    });
    expect(revoked.status).toBe(200);
    expect(await mcpStatus(access_token)).toBe(401);
    const refreshed = await fetch(`${app.url}/api/auth/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refresh_token!, client_id: own.info!.client_id }),
    });
    expect(refreshed.status).toBe(400);
    expect(await refreshed.json()).toMatchObject({ error: "invalid_grant" });
  });

  test("tokens are stored as SHA-256 digests, never as issued", async () => {
    const issued = provider.saved!;
    const { database, dataDir } = world;
    await app.stop();
    let db: Database;
    if (database) db = database.database;
    else db = await openPglite(path.join(dataDir, "pgdata"));
    try {
      const access = await db.db.select({ token: oauthAccessToken.token }).from(oauthAccessToken);
      const refresh = await db.db.select({ token: oauthRefreshToken.token }).from(oauthRefreshToken);
      const stored = [...access, ...refresh].map((r) => r.token);
      expect(stored.length).toBeGreaterThan(3);
      for (const value of stored) expect(value).toMatch(/^[0-9a-f]{64}$/);
      expect(stored).toContain(sha256(issued.access_token.slice(ACCESS_TOKEN_PREFIX.length)));
      expect(stored).toContain(sha256(issued.refresh_token!.slice(REFRESH_TOKEN_PREFIX.length)));
    } finally {
      if (!database) await db.close();
    }
  });
});
