import crypto from "node:crypto";
import http from "node:http";
import { afterAll, beforeAll, expect } from "vitest";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { migratedDataDir, startApp, tempDataDir, type AppProcess } from "../../testing/app-process.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../../testing/db.ts";
import { MemoryOAuthClient } from "../../testing/oauth-client.ts";

/**
 * The built app the MCP OAuth tests sign in to (server/auth/mcp-oauth*.test.ts), and the steps of
 * that sign-in as an MCP client and a person's browser take them over HTTP.
 */

export const redirectUrl = "http://127.0.0.1:7777/callback";
/** A browser-based MCP client's page (the MCP Inspector's), in MCP_ALLOWED_ORIGINS. */
export const inspectorOrigin = "http://localhost:6274";

export interface Person {
  cookie: string;
  token: string;
  orgId: string;
  projectId: string;
}

/**
 * Starts the app before the calling file's tests (email sign-up on, the Inspector's origin
 * allowed) and stops it after them. Called by each test file: with isolate: false a module's own
 * top-level hooks would be registered in the first file that imports it only.
 */
export function oauthApp() {
  const world = {
    started: undefined as AppProcess | undefined,
    database: undefined as TestDatabase | undefined,
    dataDir: "",
  };
  const running = () => world.started ?? expect.fail("the app starts in beforeAll");
  /** The app as the tests use it, read when they run. */
  const app = {
    get url() {
      return running().url;
    },
    output: () => running().output(),
    stop: () => running().stop(),
  };

  beforeAll(async () => {
    if (testDriver === "postgres") world.database = await createTestDatabase({ max: 2 });
    world.dataDir = world.database ? tempDataDir() : migratedDataDir();
    const { database } = world;
    world.started = await startApp({ RETASC_EMAIL_PASSWORD: "on", RETASC_DATA_DIR: world.dataDir, MCP_ALLOWED_ORIGINS: `${inspectorOrigin}, https://other.example`, ...(database ? { DATABASE_URL: database.url! } : {}) });
  });
  afterAll(async () => {
    await world.started?.stop();
    await world.database?.close();
  });

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

  /** The browser's part: the authorization URL, the consent page, the person's choice; returns the answer to that choice. */
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

  /** The code in an approval's redirect back to the client. */
  async function codeFrom(answer: Response): Promise<string> {
    expect(answer.status, app.output().slice(-3000)).toBe(302);
    const back = new URL(answer.headers.get("location")!);
    expect(`${back.origin}${back.pathname}`).toBe(redirectUrl);
    return back.searchParams.get("code")!;
  }

  /** A new client's whole sign-in, approved by `person` for `where` (`orgId|projectId`). */
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

  /** A tools/list with `token` as the bearer: its HTTP status. */
  const mcpStatus = (token: string) =>
    fetch(`${app.url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    }).then((r) => r.status);

  return Object.assign(world, { app, signUp, cliPost, consent, codeFrom, signIn, connect, mcpStatus });
}

/**
 * A GET as a browser navigating sends it (Sec-Fetch-Mode: navigate, which fetch() cannot send:
 * it says "cors", and the provider answers a script's fetch with JSON instead of a redirect).
 */
export function navigate(url: URL, cookie: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { cookie, accept: "text/html", "sec-fetch-mode": "navigate" } }, (response) => {
      response.resume();
      resolve({ status: response.statusCode ?? 0, location: response.headers.location });
    });
    request.on("error", reject);
  });
}

/** A tool call that must succeed: its structured content. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, JSON.stringify(result.structuredContent)).toBeFalsy();
  return result.structuredContent as Record<string, any>;
}
