import { beforeAll, describe, expect, test } from "vitest";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { MemoryOAuthClient } from "../testing/oauth-client.ts";
import { call, inspectorOrigin, oauthApp, redirectUrl, type Person } from "./testing/mcp-oauth.ts";

/**
 * MCP sign-in from a browser-based client's page at another origin (decision 023): the origins in
 * MCP_ALLOWED_ORIGINS get CORS on /mcp and the OAuth endpoints that read bearer tokens and PKCE,
 * never on the consent page or a cookie-based POST; another origin gets none there and is refused
 * (the discovery documents stay readable by any page).
 */

/** A page whose origin is not in MCP_ALLOWED_ORIGINS. */
const strangerOrigin = "http://evil.example";

const { app, signUp, consent, codeFrom } = oauthApp();

describe("MCP OAuth sign-in", () => {
  let alice: Person;
  beforeAll(async () => {
    alice = await signUp("alice", "ALI");
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
});
