import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import crypto from "node:crypto";
import { eq } from "drizzle-orm";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { agentKeys, connectors, members } from "../../db/schema/index.ts";
import { createTestDatabase, servicesFor, testConfig, type TestDatabase } from "../testing/db.ts";
import type { Services } from "../context.ts";
import { KEY_CACHE_MS } from "../orgs/key-cache.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { invokeTool } from "./invoke.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "./testing.ts";
import { defineTool, readOnly } from "./tool.ts";

const endpoint = `${inProcessOrigin}/mcp`;
let testDb: TestDatabase;
let services: Services;
let org: SeededOrg;
let mcpFetch: typeof fetch;

beforeAll(async () => {
  testDb = await createTestDatabase();
  services = servicesFor(testDb.database, {
    config: testConfig({ MCP_MAX_BODY_BYTES: "4096", PUBLIC_URL: "https://retasc.example.com" }),
  });
  org = await seedOrg(services);
  mcpFetch = inProcessFetch(services);
});
afterAll(() => testDb?.close());

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

function post(body: string, headers: Record<string, string> = {}) {
  return mcpFetch(endpoint, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${org.agents.alice.key}`,
      ...headers,
    },
    body,
  });
}

/** Beyond the cache's life: a poll's interval and a call's own time on a loaded machine. */
const SLACK_MS = 1_000;

/** How long after now the client's calls are refused (401), polling every 25 ms; the call's own time is not counted. */
async function msUntilRefused(client: Client): Promise<number> {
  const started = Date.now();
  for (;;) {
    const sent = Date.now();
    const refused = await client.callTool({ name: "whoami", arguments: {} }).then(() => false, (error: Error) => /401|Unauthorized/.test(error.message));
    if (refused) return sent - started;
    if (sent - started > 10_000) throw new Error("still accepted after 10 s");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("HTTP edge of /mcp", () => {
  test("no key: 401 with a Bearer challenge naming the protected resource metadata (RFC 9728)", async () => {
    const response = await post(JSON.stringify(initialize), { authorization: "" });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(
      /^Bearer realm="retasc", resource_metadata="https?:\/\/[^"/]+\/\.well-known\/oauth-protected-resource"$/,
    );
    const body = await response.json();
    expect(body.error.message).toMatch(/Authorization: Bearer/);
  });

  test("unknown key: 401 invalid_token", async () => {
    const response = await post(JSON.stringify(initialize), { authorization: `Bearer rtsc_${"x".repeat(43)}` });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
  });

  test("a key revoked, or its person suspended, elsewhere (another instance, the admin CLI) stops working within KEY_CACHE_MS", async () => {
    // Changed straight in the database, as another process would: this process's cache of the
    // key's principal (server/orgs/key-cache.ts) runs out within KEY_CACHE_MS.
    const doomed = await org.agentFor("bob", "doomed");
    const client = await connectClient(endpoint, doomed.key, { fetch: mcpFetch });
    await callOk(client, "whoami");
    await services.db.update(agentKeys).set({ revokedAt: new Date() }).where(eq(agentKeys.id, doomed.principal.keyId!));
    expect(await msUntilRefused(client)).toBeLessThan(KEY_CACHE_MS + SLACK_MS);

    const carol = await org.agentFor("carol", "carol-2");
    const carolClient = await connectClient(endpoint, carol.key, { fetch: mcpFetch });
    await callOk(carolClient, "whoami");
    await services.db.update(members).set({ status: "suspended" }).where(eq(members.userId, carol.principal.userId!));
    try {
      expect(await msUntilRefused(carolClient)).toBeLessThan(KEY_CACHE_MS + SLACK_MS);
    } finally {
      await services.db.update(members).set({ status: "active" }).where(eq(members.userId, carol.principal.userId!));
    }
  });

  test("retire_member and suspend_member cut the agents off at once", async () => {
    const owner = await connectClient(endpoint, org.agents.alice.key, { fetch: mcpFetch });
    const agent = await org.agentFor("bob", "to-retire");
    const retiring = await connectClient(endpoint, agent.key, { fetch: mcpFetch });
    await callOk(retiring, "whoami");
    expect(await callOk(owner, "retire_member", { memberId: agent.principal.keyId })).toMatchObject({ status: "retired", changed: true });
    await expect(retiring.callTool({ name: "whoami", arguments: {} })).rejects.toThrow(/401|Unauthorized/);

    const carolAgent = await org.agentFor("carol", "to-suspend");
    const carolClient = await connectClient(endpoint, carolAgent.key, { fetch: mcpFetch });
    const { members } = await callOk(owner, "list_members", { query: "carol" });
    const carol = members.find((m: { kind: string }) => m.kind === "human");
    const suspended = await callOk(owner, "suspend_member", { memberId: carol.memberId });
    expect(suspended.retiredAgents).toBeGreaterThanOrEqual(1);
    await expect(carolClient.callTool({ name: "whoami", arguments: {} })).rejects.toThrow(/401|Unauthorized/);
    expect(await callOk(owner, "reactivate_member", { memberId: carol.memberId })).toMatchObject({ status: "active", changed: true });
    // Reactivation does not revive retired keys.
    await expect(carolClient.callTool({ name: "whoami", arguments: {} })).rejects.toThrow(/401|Unauthorized/);
  });

  test("a foreign Origin gets 403, even the one the request was addressed to; the configured origins are accepted", async () => {
    // A DNS-rebound page's Origin is the very name it reached the server under.
    for (const origin of ["https://evil.example", inProcessOrigin]) {
      const foreign = await post(JSON.stringify(initialize), { origin });
      expect(foreign.status).toBe(403);
      expect((await foreign.json()).error.message).toContain(origin);
    }
    for (const origin of ["https://retasc.example.com", `http://localhost:${services.config.PORT}`]) {
      const response = await post(JSON.stringify(initialize), { origin });
      expect(response.status).toBe(200);
    }
  });

  test("an oversized body gets 413 before it is parsed", async () => {
    const big = JSON.stringify({ ...initialize, params: { ...initialize.params, padding: "x".repeat(5000) } });
    const response = await post(big);
    expect(response.status).toBe(413);
    expect((await response.json()).jsonrpc).toBe("2.0");
  });

  test("malformed JSON and non-JSON-RPC bodies get protocol errors, never a 500", async () => {
    const broken = await post("{not json");
    expect(broken.status).toBe(400);
    expect((await broken.json()).error.code).toBe(-32700);
    const notRpc = await post(JSON.stringify({ hello: "world" }));
    expect(notRpc.status).toBe(400);
    const body = await notRpc.text();
    expect(body).not.toMatch(/at .*\.(js|ts):\d+/);
    const unknownMethod = await post(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "no/such" }), {
      "mcp-protocol-version": "2025-06-18",
    });
    expect(unknownMethod.status).toBe(200);
    expect((await unknownMethod.json()).error.code).toBe(-32601);
  });

  test("GET and DELETE get 405: the server is stateless", async () => {
    for (const method of ["GET", "DELETE"]) {
      const response = await mcpFetch(endpoint, {
        method,
        headers: { accept: "text/event-stream", authorization: `Bearer ${org.agents.alice.key}` },
      });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
    }
  });
});

describe("tool calls", () => {
  test("tools/list: every tool has a description naming no price (nothing is charged), schemas and its annotations", async () => {
    const client = await connectClient(endpoint, org.agents.alice.key, { fetch: mcpFetch });
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(5);
    for (const tool of tools) {
      expect(tool.description).toBeTruthy();
      expect(tool.description).not.toMatch(/Cost: |micro-credit|\$\d|BILLING_INACTIVE/);
      expect(tool.inputSchema.type).toBe("object");
      // Left out where it would say only `{type: "object"}` (decision 091).
      if (tool.outputSchema) expect(tool.outputSchema.type).toBe("object");
      // Hints equal to the spec's defaults are left out (decision 029); every tool but run_import, which reads
      // another tracker, acts on this server only.
      expect(tool.annotations?.openWorldHint, tool.name).toBe(tool.name === "run_import" ? undefined : false);
      for (const value of Object.values(tool.annotations ?? {})) expect(typeof value, tool.name).toBe("boolean");
    }
  });

  test("an unknown tool is a JSON-RPC invalid-params error", async () => {
    const client = await connectClient(endpoint, org.agents.alice.key, { fetch: mcpFetch });
    await expect(client.callTool({ name: "drop_database", arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });

  test("tools/call without a name or with non-object arguments is a JSON-RPC invalid-params error", async () => {
    const headers = { "mcp-protocol-version": "2025-06-18" };
    for (const params of [{ arguments: {} }, { name: "whoami", arguments: ["not", "an", "object"] }, { name: 42 }]) {
      const response = await post(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params }), headers);
      expect(response.status).toBe(200);
      expect((await response.json()).error.code).toBe(-32602);
    }
  });

  test("wrong argument types and unknown arguments are INVALID_INPUT results naming the problem", async () => {
    const client = await connectClient(endpoint, org.agents.alice.key, { fetch: mcpFetch });
    const wrongType = await callError(client, "get_project", { prefix: 42 });
    expect(wrongType.code).toBe("INVALID_INPUT");
    expect(wrongType.message).toMatch(/prefix/);
    const inherited = await callError(client, "whoami", { toString: "x" });
    expect(inherited.message).toMatch(/unknown argument toString/);
    const unknown = await callError(client, "get_project", { prefx: "RTSC" });
    expect(unknown.code).toBe("INVALID_INPUT");
    expect(unknown.message).toMatch(/unknown argument prefx \(accepted: prefix\)/);
  });

  test("whoami names the human, org, project and key", async () => {
    const client = await connectClient(endpoint, org.agents.bob.key, { fetch: mcpFetch });
    const me = await callOk(client, "whoami");
    expect(me.human).toMatchObject({ userId: org.agents.bob.userId, role: "member" });
    expect(me.org.id).toBe(org.orgId);
    expect(me.project).toMatchObject({ id: org.projectId, prefix: org.prefix });
    expect(me.key).toMatchObject({ id: org.agents.bob.principal.keyId, runtime: "codex", claimCap: 7 });
  });

  test("mint_session_key mints a working key with the same identity", async () => {
    const client = await connectClient(endpoint, org.agents.bob.key, { fetch: mcpFetch });
    const minted = await callOk(client, "mint_session_key");
    expect(minted.key).toMatch(/^rtsc_/);
    expect(minted.parentKeyId).toBe(org.agents.bob.principal.keyId);
    const session = await connectClient(endpoint, minted.key, { fetch: mcpFetch });
    const me = await callOk(session, "whoami");
    expect(me.human.userId).toBe(org.agents.bob.userId);
    expect(me.key).toMatchObject({ id: minted.keyId, parentKeyId: org.agents.bob.principal.keyId, runtime: "codex" });
  });

  test("projects: list and get with counts", async () => {
    const client = await connectClient(endpoint, org.agents.alice.key, { fetch: mcpFetch });
    const { projects } = await callOk(client, "list_projects");
    expect(projects.map((p: { prefix: string }) => p.prefix)).toEqual([org.prefix]);
    const project = await callOk(client, "get_project", { prefix: org.prefix.toLowerCase() });
    expect(project).toMatchObject({ id: org.projectId, prefix: org.prefix, open: 0 });
    expect((await callError(client, "get_project", { prefix: "NOPE" })).code).toBe("NOT_FOUND");
  });

  test("connectors: metadata only, owner/admin revoke, idempotent, invisible to other orgs", async () => {
    const cipher = await services.keyring.forOrg(services.db, org.orgId);
    const connectorId = crypto.randomUUID();
    await services.db.insert(connectors).values({
      id: connectorId,
      orgId: org.orgId,
      projectId: org.projectId,
      provider: "github",
      repo: "acme/web",
      webhookSecretEnc: cipher.encrypt("whsec-very-secret"),
      tokenEnc: cipher.encrypt("ghp-very-secret"),
    });
    const alice = await connectClient(endpoint, org.agents.alice.key, { fetch: mcpFetch });
    const bob = await connectClient(endpoint, org.agents.bob.key, { fetch: mcpFetch });
    const listed = await alice.callTool({ name: "list_connectors", arguments: {} });
    expect(JSON.stringify(listed)).not.toMatch(/very-secret/);
    expect((listed.structuredContent as any).connectors).toEqual([
      expect.objectContaining({ id: connectorId, provider: "github", repo: "acme/web", project: org.prefix, tokenOnFile: true, status: "active" }),
    ]);

    const other = await seedOrg(services, { prefix: "OTH" });
    const stranger = await connectClient(endpoint, other.agents.alice.key, { fetch: mcpFetch });
    expect((await callError(stranger, "revoke_connector", { connectorId })).code).toBe("NOT_FOUND");
    expect((await callOk(stranger, "list_connectors")).connectors).toEqual([]);

    expect((await callError(bob, "revoke_connector", { connectorId })).code).toBe("FORBIDDEN");
    const revoked = await callOk(alice, "revoke_connector", { connectorId });
    expect(revoked).toMatchObject({ connectorId, status: "revoked", changed: true });
    expect(await callOk(alice, "revoke_connector", { connectorId })).toMatchObject({ changed: false, revokedAt: revoked.revokedAt });
  });

  test("usage and billing summaries are honest about what is recorded", async () => {
    const client = await connectClient(endpoint, org.agents.alice.key, { fetch: mcpFetch });
    const usage = await callOk(client, "usage_summary");
    expect(usage.metered).toBe(false);
    expect(usage.writesThisMonth).toBeGreaterThan(0);
    // The caller's own writes this month: alice revoked the connector above.
    expect(usage.byKind).toEqual(expect.arrayContaining([expect.objectContaining({ kind: "connector.revoked" })]));
    const billing = await callOk(client, "billing_summary");
    expect(billing).toMatchObject({ enabled: false, balance: null, spendCap: null });
  });
});

describe("the invoke wrapper", () => {
  test("an unexpected failure becomes UNAVAILABLE with the request id; the detail only reaches the log", async () => {
    const lines: string[] = [];
    const log = pino({ level: "info" }, new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }));
    const exploding = defineTool({
      name: "explode",
      title: "Explode",
      group: "observability",
      description: "test only",
      input: z.object({}),
      output: z.object({}),
      annotations: readOnly,
      handler: async () => {
        throw new Error("connection string postgres://secret@db");
      },
    });
    const result = await invokeTool({ services, principal: org.agents.alice.principal, log, requestId: "req-123" }, exploding, {});
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual({
      error: { code: "UNAVAILABLE", message: "explode failed on the server", hint: expect.stringContaining("req-123") },
    });
    expect(JSON.stringify(result)).not.toMatch(/secret/);
    expect(lines.join("")).toMatch(/secret@db/);
  });
});
