import crypto from "node:crypto";
import { beforeAll, describe, expect, test } from "vitest";
import { connectors } from "../../db/schema/index.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { callError, callOk, connectClient } from "./testing.ts";
import { endpoint, useMcpOrg, type McpOrg } from "./testing/mcp-org.ts";

/** Tool calls over /mcp in process: tools/list, malformed calls and arguments, and the tools about the caller and its org. */
const { mcp, post } = useMcpOrg();
let { services, org, mcpFetch } = {} as McpOrg;
beforeAll(() => ({ services, org, mcpFetch } = mcp));

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
