import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Browser } from "playwright-core";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { MemoryOAuthClient } from "../server/testing/oauth-client.ts";
import { launchBrowser, signUp, startE2eApp, tool, type E2eApp, type Person } from "./harness.ts";

/**
 * MCP sign-in as a person meets it: an MCP client with the SDK's own OAuth support (as Claude
 * Code's `claude mcp add --transport http retasc <url>/mcp` does) opens the browser on the
 * authorization URL; Chromium, signed out, is sent to sign in, comes back to the consent page,
 * picks the org and approves; the browser lands on the client's loopback callback with the code.
 * Then: the token exchange, tools/list, a claim, refresh, revocation.
 */
let app: E2eApp;
let browser: Browser;
let ada: Person;
let callback: http.Server;
let redirectUrl: string;
let codes: { resolve: (code: string) => void } | null = null;

beforeAll(async () => {
  [app, browser] = await Promise.all([startE2eApp(), launchBrowser()]);
  ada = await signUp(browser, app, "Ada");
  await ada.page.getByLabel("Org name").fill("Analytical");
  await ada.page.getByRole("button", { name: "Create org" }).click();
  await ada.page.waitForURL(/\/dash\/settings\/projects$/);
  // The client's loopback redirect URI (RFC 8252), as a CLI agent listens for it.
  callback = http.createServer((req, res) => {
    const code = new URL(req.url ?? "/", "http://127.0.0.1").searchParams.get("code");
    res.writeHead(200, { "content-type": "text/plain" }).end("Signed in; you can close this tab.");
    if (code) codes?.resolve(code);
  });
  await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve));
  redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => (callback ? callback.close(() => resolve()) : resolve()));
  await browser?.close();
  await app?.close();
});


test("discovery, registration, sign-in and consent in Chromium, token, tools, refresh, revocation, the Keys page", async () => {
  const serverUrl = `${app.url}/mcp`;
  const provider = new MemoryOAuthClient(redirectUrl, "Claude Code (retasc)");
  expect(await auth(provider, { serverUrl })).toBe("REDIRECT");

  // A browser of Ada's that is signed out: the consent page sends her to sign in first.
  const context = await browser.newContext();
  const page = await context.newPage();
  const code = new Promise<string>((resolve) => (codes = { resolve }));
  await page.goto(provider.authorizationUrl!.toString());
  await page.waitForURL(/\/auth\/sign-in\?next=%2Foauth%2Fconsent/);
  await page.getByLabel("Email").fill(ada.email);
  await page.getByLabel("Password").fill("correct horse battery staple");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/oauth\/consent\?/);
  await expect.poll(() => page.getByTestId("client-name").textContent()).toBe("Claude Code (retasc)");
  await page.getByLabel("Where it works").selectOption({ label: "Analytical: every project" });
  await page.getByRole("button", { name: "Approve" }).click();
  await page.waitForURL((url) => url.toString().startsWith(redirectUrl));
  expect(await page.textContent("body")).toContain("Signed in");
  await context.close();

  expect(await auth(provider, { serverUrl, authorizationCode: await code })).toBe("AUTHORIZED");
  const client = new Client({ name: "claude-code", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider }));
  expect((await client.listTools()).tools.map((t) => t.name)).toContain("next_issue");
  expect(await tool(client, "whoami")).toMatchObject({ kind: "agent", org: { name: "Analytical" }, human: { email: ada.email }, key: { runtime: "Claude-Code-retasc" } });
  await client.close();

  // Refresh, then revoke the new access token (RFC 7009): /mcp refuses it at once.
  const first = provider.saved!.access_token;
  expect(await auth(provider, { serverUrl })).toBe("AUTHORIZED");
  const refreshed = provider.saved!.access_token;
  expect(refreshed).not.toBe(first);
  const revoke = await fetch(`${app.url}/api/auth/oauth2/revoke`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: refreshed, token_type_hint: "access_token", client_id: provider.info!.client_id }),
  });
  expect(revoke.status).toBe(200);
  const refused = await fetch(serverUrl, {
    method: "POST",
    headers: { authorization: `Bearer ${refreshed}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  expect(refused.status).toBe(401);

  // The grant is on the Keys page beside agent keys, marked OAuth, revocable, with nothing to rotate.
  await ada.page.goto(`${app.url}/dash/settings/keys`);
  const row = ada.page.getByRole("row").filter({ hasText: "Claude-Code-retasc" });
  await expect.poll(() => row.getByTitle("Approved for Claude Code (retasc) (OAuth sign-in)").count()).toBe(1);
  expect(await row.getByRole("button", { name: /^Revoke/ }).count()).toBe(1);
  expect(await row.getByRole("button", { name: /^Rotate/ }).count()).toBe(0);
});
