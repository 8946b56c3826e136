import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq } from "drizzle-orm";
import { Writable } from "node:stream";
import pino from "pino";
import { beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { agentKeys, members } from "../../db/schema/index.ts";
import { KEY_CACHE_MS } from "../orgs/key-cache.ts";
import { invokeTool } from "./invoke.ts";
import { callOk, connectClient, initialize, inProcessOrigin } from "./testing.ts";
import { endpoint, useMcpOrg, type McpOrg } from "./testing/mcp-org.ts";
import { defineTool, readOnly } from "./tool.ts";

/** /mcp at the HTTP edge: keys, origins, bodies and methods, and what a failure shows. The tools' calls are http-tools.test.ts. */
const { mcp, post } = useMcpOrg();
let { services, org, mcpFetch } = {} as McpOrg;
beforeAll(() => ({ services, org, mcpFetch } = mcp));

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
