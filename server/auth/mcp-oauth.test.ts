import crypto from "node:crypto";
import http from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { openPglite, type Database } from "../../db/client.ts";
import { oauthAccessToken, oauthRefreshToken } from "../../db/schema/index.ts";
import { sha256 } from "../crypto/index.ts";
import { startApp, tempDataDir, type AppProcess } from "../testing/app-process.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { MemoryOAuthClient } from "../testing/oauth-client.ts";
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX } from "./oauth.ts";

/**
 * MCP sign-in end to end against the built app over HTTP, driven by the official MCP SDK's own
 * client OAuth support (`auth()` with an OAuthClientProvider): discovery from /mcp's 401 (RFC
 * 9728, RFC 8414), dynamic registration, authorization code + PKCE, the consent page (the
 * browser's part done over HTTP with the person's session cookie), tokens, tool calls, refresh,
 * revocation. e2e/oauth.test.ts does the consent step in Chromium.
 */


let app: AppProcess;
let database: TestDatabase | undefined;
let dataDir: string;
const redirectUrl = "http://127.0.0.1:7777/callback";
/** A browser-based MCP client's page (the MCP Inspector's), in MCP_ALLOWED_ORIGINS; and one that is not. */
const inspectorOrigin = "http://localhost:6274";
const strangerOrigin = "http://evil.example";

interface Person {
  cookie: string;
  token: string;
  orgId: string;
  projectId: string;
}

async function signUp(tag: string, prefix: string): Promise<Person> {
  const email = `${tag}-${crypto.randomBytes(3).toString("hex")}@example.com`;
  const response = await fetch(`${app.url}/api/auth/sign-up/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: app.url },
    body: JSON.stringify({ email, password: "correct horse battery", name: tag }),
  });
  expect(response.status, await response.clone().text()).toBe(200);
  const cookie = response.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  const token = response.headers.get("set-auth-token")!;
  const { orgId } = await cliPost(token, "orgs", { name: `${tag} org` });
  const { projectId } = await cliPost(token, "projects", { orgId, name: tag, prefix });
  return { cookie, token, orgId: orgId!, projectId: projectId! };
}

/** A POST to the CLI's endpoints with a person's session token. */
async function cliPost(token: string, route: string, body: unknown): Promise<Record<string, string>> {
  const response = await fetch(`${app.url}/api/cli/${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status, route).toBe(200);
  return (await response.json()) as Record<string, string>;
}

/** The browser's part: the authorization URL, the consent page, the person's choice; returns the code. */
async function consent(person: Person, authorizationUrl: URL, where: string, decision = "approve") {
  const authorize = await navigate(authorizationUrl, person.cookie);
  expect(authorize.status).toBe(302);
  const consentUrl = new URL(authorize.location!, app.url);
  expect(consentUrl.pathname).toBe("/oauth/consent");
  const page = await fetch(consentUrl, { headers: { cookie: person.cookie } });
  expect(await page.text()).toContain("Retasc Test Agent");
  const answer = await fetch(consentUrl, {
    method: "POST",
    headers: { cookie: person.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ oauth_query: consentUrl.search.slice(1), where, decision }),
    redirect: "manual",
  });
  return answer;
}

/**
 * A GET as a browser navigating sends it (Sec-Fetch-Mode: navigate, which fetch() cannot send:
 * it says "cors", and the provider answers a script's fetch with JSON instead of a redirect).
 */
function navigate(url: URL, cookie: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { cookie, accept: "text/html", "sec-fetch-mode": "navigate" } }, (response) => {
      response.resume();
      resolve({ status: response.statusCode ?? 0, location: response.headers.location });
    });
    request.on("error", reject);
  });
}

async function codeFrom(answer: Response): Promise<string> {
  expect(answer.status, app.output().slice(-3000)).toBe(302);
  const back = new URL(answer.headers.get("location")!);
  expect(`${back.origin}${back.pathname}`).toBe(redirectUrl);
  return back.searchParams.get("code")!;
}

async function signIn(person: Person, where: string) {
  const provider = new MemoryOAuthClient(redirectUrl);
  expect(await auth(provider, { serverUrl: `${app.url}/mcp` })).toBe("REDIRECT");
  const code = await codeFrom(await consent(person, provider.authorizationUrl!, where));
  expect(await auth(provider, { serverUrl: `${app.url}/mcp`, authorizationCode: code })).toBe("AUTHORIZED");
  return provider;
}

async function connect(provider: MemoryOAuthClient) {
  const client = new Client({ name: "oauth-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { authProvider: provider }));
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, JSON.stringify(result.structuredContent)).toBeFalsy();
  return result.structuredContent as Record<string, any>;
}

const mcpStatus = (token: string) =>
  fetch(`${app.url}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  }).then((r) => r.status);

beforeAll(async () => {
  dataDir = tempDataDir();
  if (testDriver === "postgres") database = await createTestDatabase({ max: 2 });
  app = await startApp({ RETASC_EMAIL_PASSWORD: "on", RETASC_DATA_DIR: dataDir, MCP_ALLOWED_ORIGINS: `${inspectorOrigin}, https://other.example`, ...(database ? { DATABASE_URL: database.url! } : {}) });
});
afterAll(async () => {
  await app?.stop();
  await database?.close();
});

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

  describe("a browser-based client at another origin (MCP_ALLOWED_ORIGINS)", () => {
    let inspector: MemoryOAuthClient;
    /** fetch as a page at `origin` makes it: Origin on every request; each answer kept with its URL. */
    function browserFetch(origin: string) {
      const answers: { url: string; response: Response }[] = [];
      const fetchFn = async (url: string | URL, init?: RequestInit) => {
        const headers = new Headers(init?.headers);
        headers.set("origin", origin);
        const response = await fetch(url, { ...init, headers });
        answers.push({ url: String(url), response });
        return response;
      };
      return { fetchFn, answers };
    }
    const preflight = (where: string, origin: string) =>
      fetch(`${app.url}${where}`, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type, mcp-protocol-version" },
      });

    test("preflights are answered for the allowed origin on /mcp, discovery and the token, registration and revocation endpoints", async () => {
      for (const where of ["/mcp", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server/api/auth", "/api/auth/oauth2/token", "/api/auth/oauth2/register", "/api/auth/oauth2/revoke"]) {
        const answer = await preflight(where, inspectorOrigin);
        expect(answer.status, where).toBe(204);
        expect(answer.headers.get("access-control-allow-origin"), where).toBe(inspectorOrigin);
        expect(answer.headers.get("access-control-allow-headers")).toBe("authorization, content-type, mcp-protocol-version, mcp-session-id, last-event-id");
        expect(answer.headers.get("access-control-allow-methods")).toContain("POST");
        expect(answer.headers.get("access-control-allow-credentials")).toBeNull();
      }
    });

    test("discovery, registration, PKCE, token exchange, refresh, /mcp and revocation all work from the allowed origin, every answer carrying its CORS headers", async () => {
      const { fetchFn, answers } = browserFetch(inspectorOrigin);
      // The key-less 401 the sign-in starts from is readable by the page, WWW-Authenticate included.
      const keyless = await fetchFn(`${app.url}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(keyless.status).toBe(401);
      expect(keyless.headers.get("www-authenticate")).toContain("resource_metadata=");
      inspector = new MemoryOAuthClient(redirectUrl);
      const provider = inspector;
      expect(await auth(provider, { serverUrl: `${app.url}/mcp`, fetchFn })).toBe("REDIRECT");
      // The consent step is the person's own navigation on this app's origin, as before.
      const code = await codeFrom(await consent(alice, provider.authorizationUrl!, `${alice.orgId}|`));
      expect(await auth(provider, { serverUrl: `${app.url}/mcp`, authorizationCode: code, fetchFn })).toBe("AUTHORIZED");
      const client = new Client({ name: "browser-oauth-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { authProvider: provider, fetch: fetchFn }));
      expect(await call(client, "whoami")).toMatchObject({ kind: "agent", org: { id: alice.orgId }, key: { runtime: "Retasc-Test-Agent" } });
      await client.close();
      expect(await auth(provider, { serverUrl: `${app.url}/mcp`, fetchFn })).toBe("AUTHORIZED");
      const revoked = await fetchFn(`${app.url}/api/auth/oauth2/revoke`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token: provider.saved!.access_token, token_type_hint: "access_token", client_id: provider.info!.client_id }),
      });
      expect(revoked.status).toBe(200);

      const paths = new Set(answers.map((a) => new URL(a.url).pathname));
      for (const where of ["/mcp", "/.well-known/oauth-protected-resource/mcp", "/api/auth/oauth2/register", "/api/auth/oauth2/token", "/api/auth/oauth2/revoke"]) expect(paths, where).toContain(where);
      for (const { url, response } of answers) {
        // The discovery documents are public: any page may read them (`*`), as before.
        if (new URL(url).pathname.startsWith("/.well-known/")) {
          expect(response.headers.get("access-control-allow-origin"), url).toBe("*");
          continue;
        }
        expect(response.headers.get("access-control-allow-origin"), url).toBe(inspectorOrigin);
        expect(response.headers.get("access-control-expose-headers"), url).toBe("www-authenticate, mcp-session-id");
        expect(response.headers.get("access-control-allow-credentials"), url).toBeNull();
      }
    });

    test("an origin not in the list gets no CORS headers, and its POSTs to /mcp and the OAuth endpoints are refused", async () => {
      for (const where of ["/mcp", "/api/auth/oauth2/token", "/api/auth/oauth2/register"]) {
        const answer = await preflight(where, strangerOrigin);
        expect(answer.status, where).not.toBe(204);
        expect(answer.headers.get("access-control-allow-origin"), where).toBeNull();
      }
      expect((await preflight("/.well-known/oauth-protected-resource/mcp", strangerOrigin)).headers.get("access-control-allow-methods")).toBeNull();

      const { fetchFn } = browserFetch(strangerOrigin);
      const register = await fetchFn(`${app.url}/api/auth/oauth2/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(new MemoryOAuthClient(redirectUrl).clientMetadata),
      });
      expect(register.status).toBe(403);
      const token = await fetchFn(`${app.url}/api/auth/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: inspector.saved!.refresh_token!, client_id: inspector.info!.client_id }),
      });
      expect(token.status).toBe(403);
      expect(token.headers.get("access-control-allow-origin")).toBeNull();

      // DNS-rebinding protection holds on /mcp: a valid token from a foreign page is refused.
      expect(await auth(inspector, { serverUrl: `${app.url}/mcp` })).toBe("AUTHORIZED");
      const mcp = await fetchFn(`${app.url}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${inspector.saved!.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(mcp.status).toBe(403);
      expect(mcp.headers.get("access-control-allow-origin")).toBeNull();
    });

    test("the consent page and every other POST still refuse the allowed origin: it is open to bearer endpoints only", async () => {
      const browser = new MemoryOAuthClient(redirectUrl);
      expect(await auth(browser, { serverUrl: `${app.url}/mcp` })).toBe("REDIRECT");
      const consentUrl = new URL(`/oauth/consent${browser.authorizationUrl!.search}`, app.url);
      const consentPreflight = await preflight("/oauth/consent", inspectorOrigin);
      expect(consentPreflight.headers.get("access-control-allow-origin")).toBeNull();
      const approve = await fetch(consentUrl, {
        method: "POST",
        headers: { cookie: alice.cookie, origin: inspectorOrigin, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ oauth_query: consentUrl.search.slice(1), where: `${alice.orgId}|`, decision: "approve" }),
        redirect: "manual",
      });
      expect(approve.status).toBe(403);
      expect(approve.headers.get("access-control-allow-origin")).toBeNull();
      for (const where of ["/api/auth/sign-in/email", "/api/auth/oauth2/consent", "/api/cli/orgs"]) {
        const answer = await fetch(`${app.url}${where}`, {
          method: "POST",
          headers: { cookie: alice.cookie, origin: inspectorOrigin, "content-type": "application/json" },
          body: "{}",
        });
        expect(answer.status, where).toBe(403);
        expect(answer.headers.get("access-control-allow-origin"), where).toBeNull();
      }
    });
  });

  test("tokens are stored as SHA-256 digests, never as issued", async () => {
    const issued = provider.saved!;
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
