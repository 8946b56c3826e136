import { beforeAll, describe, expect, test } from "vitest";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { MemoryOAuthClient } from "../testing/oauth-client.ts";
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX } from "./oauth.ts";
import { call, oauthApp, redirectUrl, type Person } from "./testing/mcp-oauth.ts";

/**
 * MCP sign-in end to end against the built app over HTTP, driven by the official MCP SDK's own
 * client OAuth support (`auth()` with an OAuthClientProvider): discovery from /mcp's 401 (RFC
 * 9728, RFC 8414), dynamic registration, authorization code + PKCE, the consent page (the
 * browser's part done over HTTP with the person's session cookie), tokens, tool calls, and what
 * consent and a token refuse. Refresh, revocation and storage are in mcp-oauth-tokens.test.ts, a
 * browser-based client at another origin in mcp-oauth-cors.test.ts. e2e/oauth.test.ts does the
 * consent step in Chromium.
 */

const { app, signUp, consent, codeFrom, signIn, connect, mcpStatus } = oauthApp();

describe("MCP OAuth sign-in", () => {
  let alice: Person;
  let bob: Person;
  let provider: MemoryOAuthClient;
  beforeAll(async () => {
    alice = await signUp("alice", "ALI");
    bob = await signUp("bob", "BOB");
  });

  test("discovery: /mcp's 401 names the resource metadata, which names the authorization server", async () => {
    const denied = await fetch(`${app.url}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(denied.status).toBe(401);
    expect(denied.headers.get("www-authenticate")).toBe(`Bearer realm="retasc", resource_metadata="${app.url}/.well-known/oauth-protected-resource"`);
    for (const where of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
      const resource = await (await fetch(`${app.url}${where}`)).json();
      expect(resource).toMatchObject({ resource: `${app.url}/mcp`, authorization_servers: [`${app.url}/api/auth`], scopes_supported: ["mcp", "offline_access"] });
    }
    for (const where of ["/.well-known/oauth-authorization-server/api/auth", "/.well-known/oauth-authorization-server"]) {
      const server = await (await fetch(`${app.url}${where}`)).json();
      expect(server).toMatchObject({
        issuer: `${app.url}/api/auth`,
        authorization_endpoint: `${app.url}/api/auth/oauth2/authorize`,
        token_endpoint: `${app.url}/api/auth/oauth2/token`,
        registration_endpoint: `${app.url}/api/auth/oauth2/register`,
        revocation_endpoint: `${app.url}/api/auth/oauth2/revoke`,
        code_challenge_methods_supported: ["S256"],
        grant_types_supported: ["authorization_code", "refresh_token"],
      });
    }
  });

  test("registration, PKCE, consent, tokens: the token acts as an agent key of the approving person in the org and project chosen", async () => {
    provider = await signIn(alice, `${alice.orgId}|${alice.projectId}`);
    expect(provider.saved!.access_token.startsWith(ACCESS_TOKEN_PREFIX)).toBe(true);
    expect(provider.saved!.refresh_token!.startsWith(REFRESH_TOKEN_PREFIX)).toBe(true);
    const client = await connect(provider);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("next_issue");
    const me = await call(client, "whoami");
    expect(me).toMatchObject({ kind: "agent", org: { id: alice.orgId }, project: { id: alice.projectId, prefix: "ALI" }, key: { runtime: "Retasc-Test-Agent" } });
    const issue = await call(client, "save_issue", { title: "Signed in with OAuth", work: true, changeType: "feat", noDependency: "oauth test" });
    const claimed = (await client.callTool({ name: "next_issue", arguments: {} })) as CallToolResult;
    const claim = claimed.structuredContent as Record<string, any>;
    expect(claim.issue?.identifier ?? claim.identifier).toBe(issue.identifier);
    // The token's writes say where they landed, as a key's do (decision 080): its org and project, read with the token.
    expect(claimed.content.at(-1)).toEqual({ type: "text", text: `— in ${me.org.name} / ${me.project.name}` });
    await client.close();

    // The grant is an agent key of Alice's, listed beside her others.
    const keys = await fetch(`${app.url}/api/cli/keys?orgId=${alice.orgId}`, { headers: { authorization: `Bearer ${alice.token}` } }).then((r) => r.json());
    expect(keys.keys).toEqual([expect.objectContaining({ keyId: me.key.id, runtime: "Retasc-Test-Agent", projectId: alice.projectId, oauthClient: "Retasc Test Agent", status: "active" })]);
  });

  test("a token cannot mint a session key: refused FORBIDDEN, saying to use the token itself, and nothing is minted under the grant", async () => {
    const listed = async () =>
      (await fetch(`${app.url}/api/cli/keys?orgId=${alice.orgId}&includeRevoked=true`, { headers: { authorization: `Bearer ${alice.token}` } }).then((r) => r.json())).keys as unknown[];
    const before = (await listed()).length;
    const client = await connect(provider);
    const minted = (await client.callTool({ name: "mint_session_key", arguments: { label: "keep me" } })) as CallToolResult;
    expect(minted.isError, JSON.stringify(minted.structuredContent)).toBe(true);
    expect(minted.structuredContent).toMatchObject({
      error: {
        code: "FORBIDDEN",
        message: "an OAuth access token cannot mint session keys: a key minted from it would outlive the token and its grant",
        hint: expect.stringContaining("Use the token itself in every session"),
      },
    });
    await client.close();
    expect(await listed()).toHaveLength(before);
  });
  test("an org the person is not a member of is refused at consent; deny returns access_denied; a token is bound to its own org", async () => {
    const stranger = new MemoryOAuthClient(redirectUrl);
    expect(await auth(stranger, { serverUrl: `${app.url}/mcp` })).toBe("REDIRECT");
    const crossOrg = await consent(alice, stranger.authorizationUrl!, `${bob.orgId}|`);
    expect(crossOrg.status).toBe(200);
    expect(await crossOrg.text()).toMatch(/not a member of that org/);

    const denied = new URL((await consent(alice, stranger.authorizationUrl!, `${alice.orgId}|`, "deny")).headers.get("location")!);
    expect(denied.searchParams.get("error")).toBe("access_denied");

    const bobs = await signIn(bob, `${bob.orgId}|`);
    const client = await connect(bobs);
    expect(await call(client, "whoami")).toMatchObject({ org: { id: bob.orgId }, project: null });
    const aliceIssues = await client.callTool({ name: "get_issue", arguments: { identifier: "ALI-1" } });
    expect(aliceIssues.isError).toBe(true);
    await client.close();
  });

  test("a token without the /mcp audience, or a made-up one, is refused", async () => {
    expect(await mcpStatus(`${ACCESS_TOKEN_PREFIX}${"x".repeat(32)}`)).toBe(401);
    const plain = new MemoryOAuthClient(redirectUrl);
    expect(await auth(plain, { serverUrl: `${app.url}/mcp` })).toBe("REDIRECT");
    // The same client asking without `resource` (RFC 8707): its token has no audience.
    const unbound = new URL(plain.authorizationUrl!);
    unbound.searchParams.delete("resource");
    const code = await codeFrom(await consent(alice, unbound, `${alice.orgId}|`));
    const exchanged = await fetch(`${app.url}/api/auth/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", code, code_verifier: plain.verifier, redirect_uri: redirectUrl, client_id: plain.info!.client_id }),
    });
    expect(exchanged.status).toBe(200);
    const { access_token } = (await exchanged.json()) as { access_token: string };
    expect(access_token.startsWith(ACCESS_TOKEN_PREFIX)).toBe(true);
    expect(await mcpStatus(access_token)).toBe(401);
  });
});
