import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import fc from "fast-check";
import { beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import type { Services } from "../context.ts";
import { leases } from "../../db/schema/index.ts";
import { createLogger } from "../log.ts";
import type { SeededOrg } from "../testing/fixtures.ts";
import { handleMcpRequest } from "./http.ts";
import { invokeTool, type CallScope } from "./invoke.ts";
import { instructionsFor } from "./instructions.ts";
import { listedTools, serverInfo, toolsByName } from "./registry.ts";
import { call, initialize, jsonHeaders, useMcpServices } from "./testing.ts";

/**
 * server/mcp/protocol.ts answers a POST as the SDK's stateless transport and low-level
 * server would. Here the SDK itself, built per request around the same handlers, is the
 * reference: every request, fixed and generated, must get the same status, content type
 * and body (byte for byte) from both. protocol-node.test.ts holds the Node entry point,
 * over a real socket, to the Fetch one.
 */
const log = createLogger("silent");
const requestId = "parity-1";
const world = useMcpServices();
let services: Services;
let org: SeededOrg;
let scope: CallScope;
let identifier: string;

beforeAll(() => {
  ({ services, org, identifier } = world);
  scope = { services, principal: org.agents.alice.principal, log, requestId };
});

/** The SDK's answer: a fresh `Server` and transport, our handlers registered under method-only schemas. */
async function reference(request: Request): Promise<Response> {
  const server = new Server(serverInfo, { capabilities: { tools: { listChanged: false } }, instructions: await instructionsFor(services, scope.principal) });
  server.setRequestHandler(z.object({ method: z.literal("tools/list") }), () => ({ tools: listedTools() }));
  server.setRequestHandler(z.object({ method: z.literal("tools/call"), params: z.unknown().optional() }), async (raw) => {
    const call = CallToolRequestSchema.parse(raw);
    const tool = toolsByName.get(call.params.name);
    if (!tool) {
      throw Object.assign(new Error(`Unknown tool: ${call.params.name.slice(0, 100)}. Call tools/list for the tools.`), {
        code: ErrorCode.InvalidParams,
      });
    }
    return invokeTool(scope, tool, call.params.arguments ?? {});
  });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: services.config.MCP_MAX_BODY_BYTES,
  });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request);
  } finally {
    await server.close();
  }
}

interface Shot {
  body: string;
  headers: Record<string, string>;
}

const toRequest = (shot: Shot, url = "http://retasc.test/mcp") =>
  new Request(url, { method: "POST", headers: shot.headers, body: shot.body });

async function outcome(response: Response) {
  return { status: response.status, contentType: response.headers.get("content-type"), body: await response.text() };
}

/** Ours, through the Fetch entry point: the same key, so the same principal as the reference's. */
async function ours(shot: Shot) {
  const headers = { ...shot.headers, authorization: `Bearer ${org.agents.alice.key}`, "x-request-id": requestId };
  return outcome(await handleMcpRequest(toRequest({ ...shot, headers }), { services, log }));
}

async function expectParity(shot: Shot) {
  expect(await ours(shot), shot.body.slice(0, 300)).toEqual(await outcome(await reference(toRequest(shot))));
}

/** Built when the test runs, once the seeded issue exists. */
type Lazy<T> = () => T;

function fixedShots(): [string, Lazy<Shot>][] {
  const post =
    (body: unknown, headers: Record<string, string> = {}): Lazy<Shot> =>
    () => ({ body: typeof body === "string" ? body : JSON.stringify(typeof body === "function" ? body() : body), headers: { ...jsonHeaders, ...headers } });
  return [
    ["initialize", post(initialize)],
    ["initialize, unknown version", post({ ...initialize, params: { ...initialize.params, protocolVersion: "1999-01-01" } })],
    ["initialize, bad params", post({ ...initialize, params: { protocolVersion: 3 } })],
    ["initialize twice in a batch", post([initialize, { ...initialize, id: 2 }])],
    ["initialize alone in a batch", post([initialize])],
    ["initialize with a task", post({ ...initialize, params: { ...initialize.params, task: { ttl: 5 } } })],
    ["ping", post({ jsonrpc: "2.0", id: "p", method: "ping" })],
    ["ping, params not an object", post({ jsonrpc: "2.0", id: "p", method: "ping", params: 5 })],
    ["ping, bad _meta", post({ jsonrpc: "2.0", id: "p", method: "ping", params: { _meta: { progressToken: 1.5 } } })],
    ["get_issue", post(() => call("get_issue", { identifier }), { "mcp-protocol-version": "2025-06-18" })],
    ["get_issue, not found", post(call("get_issue", { identifier: "RTSC-99999" }))],
    ["get_issue, bad arguments", post(call("get_issue", { identifier: 5, extra: 1 }))],
    ["unknown tool", post(call("drop_database", {}))],
    ["tools/call without a name", post({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { arguments: {} } })],
    ["tools/call without params", post({ jsonrpc: "2.0", id: 3, method: "tools/call" })],
    ["tools/call, arguments an array", post(call("whoami", [1]))],
    ["tools/call, name a number", post({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: 42 } })],
    ["tools/call with a task", post({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "whoami", task: { ttl: 5 } } })],
    ["tools/call, task not an object", post({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "whoami", task: 5 } })],
    ["tools/list", post({ jsonrpc: "2.0", id: 2, method: "tools/list" })],
    ["unknown method", post({ jsonrpc: "2.0", id: 7, method: "no/such" })],
    ["logging/setLevel (not declared)", post({ jsonrpc: "2.0", id: 7, method: "logging/setLevel", params: { level: "debug" } })],
    ["tasks/list (not declared)", post({ jsonrpc: "2.0", id: 7, method: "tasks/list" })],
    ["a notification", post({ jsonrpc: "2.0", method: "notifications/initialized" })],
    ["a cancellation", post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } })],
    ["a response", post({ jsonrpc: "2.0", id: 9, result: {} })],
    ["an error response", post({ jsonrpc: "2.0", id: 9, error: { code: 1, message: "x" } })],
    ["an empty batch", post("[]")],
    ["a mixed batch", post(() => [call("whoami", {}, 1), call("get_issue", { identifier }, "two"), { jsonrpc: "2.0", method: "notifications/initialized" }])],
    ["ids 1 and \"1\" are distinct", post([call("whoami", {}, 1), call("list_projects", {}, "1")])],
    ["a batch too large", post(Array.from({ length: 101 }, () => ({ jsonrpc: "2.0", method: "notifications/initialized" })))],
    ["not JSON", post("{nope")],
    ["empty body", post("")],
    ["not JSON-RPC", post({ hello: "world" })],
    ["JSON-RPC 1.0", post({ jsonrpc: "1.0", id: 1, method: "ping" })],
    ["a fractional id", post({ jsonrpc: "2.0", id: 1.5, method: "ping" })],
    ["an extra member", post({ jsonrpc: "2.0", id: 1, method: "ping", extra: true })],
    ["unsupported protocol version", post({ jsonrpc: "2.0", id: 1, method: "ping" }, { "mcp-protocol-version": "2020-01-01" })],
    ["unsupported version on initialize", post(initialize, { "mcp-protocol-version": "2020-01-01" })],
    ["Accept without event streams", post(initialize, { accept: "application/json" })],
    ["no Accept", () => ({ body: JSON.stringify(initialize), headers: { "content-type": "application/json" } })],
    ["text/plain", post(initialize, { "content-type": "text/plain" })],
    ["JSON with a charset", post(initialize, { "content-type": "application/json; charset=utf-8" })],
    ["a byte order mark", post(`\uFEFF${JSON.stringify(initialize)}`)],
    ["too large", post({ ...initialize, params: { ...initialize.params, padding: "x".repeat(5000) } })],
    ["just under the limit, multibyte", post({ ...initialize, params: { ...initialize.params, padding: "é".repeat(1900) } })],
  ];
}

describe("protocol.ts answers as the SDK", () => {
  test.each(fixedShots())("%s", async (_name, shot) => {
    await expectParity(shot());
  });

  test("generated requests", async () => {
    const readTools = ["whoami", "get_issue", "get_project", "list_projects", "list_labels", "list_comments"];
    const value = fc.oneof(
      fc.constant(identifier),
      fc.string({ maxLength: 20 }),
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
    );
    const params = fc.oneof(
      value,
      fc.record(
        {
          name: fc.oneof(fc.constantFrom(...readTools), value),
          arguments: fc.oneof(fc.dictionary(fc.constantFrom("identifier", "prefix", "issue", "x"), value, { maxKeys: 3 }), value),
          task: value,
          _meta: fc.oneof(value, fc.record({ progressToken: value }, { requiredKeys: [] })),
          protocolVersion: fc.constantFrom("2025-06-18", "2024-11-05", "nope"),
          capabilities: value,
          clientInfo: fc.oneof(value, fc.constant({ name: "c", version: "1" })),
        },
        { requiredKeys: [] },
      ),
    );
    const method = fc.oneof(
      { weight: 9, arbitrary: fc.constantFrom("tools/call", "tools/list", "initialize", "ping", "notifications/initialized", "notifications/cancelled", "resources/list", "completion/complete") },
      { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
    );
    const id = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom("a", "b"), value);
    // Mostly well-formed requests, notifications and responses, now and then with a member
    // of another kind or a wrong version: the edges the transport's checks are about.
    const extra = fc.record({ jsonrpc: value, id, method, params, result: value, error: value }, { requiredKeys: [] });
    const message = fc
      .tuple(
        fc.oneof(
          { weight: 6, arbitrary: fc.record({ jsonrpc: fc.constant("2.0"), id, method, params: fc.option(params, { nil: undefined }) }) },
          { weight: 2, arbitrary: fc.record({ jsonrpc: fc.constant("2.0"), method, params: fc.option(params, { nil: undefined }) }) },
          { weight: 1, arbitrary: fc.record({ jsonrpc: fc.constant("2.0"), id, result: value }) },
          { weight: 1, arbitrary: fc.record({ jsonrpc: fc.constant("2.0"), id, error: value }) },
        ),
        fc.oneof({ weight: 4, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: extra }),
      )
      .map(([base, mutation]) => ({ ...base, ...mutation }));
    const shot = fc.record({
      body: fc.oneof(
        { weight: 6, arbitrary: message.map((m) => JSON.stringify(m)) },
        // Distinct ids in a batch: with a repeated id, which call answers depends on timing.
        { weight: 2, arbitrary: fc.array(message, { maxLength: 4 }).map((ms) => JSON.stringify(ms.map((m, i) => ({ ...m, id: i })))) },
        { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
        { weight: 1, arbitrary: value.map((v) => JSON.stringify(v)) },
      ),
      headers: fc.record({
        "content-type": fc.constantFrom("application/json", "application/json", "text/plain", "application/json; charset=utf-8", "application/jsonx"),
        accept: fc.constantFrom("application/json, text/event-stream", "application/json, text/event-stream", "application/json", "*/*"),
        "mcp-protocol-version": fc.constantFrom("2025-06-18", "2025-11-25", "2020-01-01"),
      }),
    });
    await fc.assert(fc.asyncProperty(shot, expectParity), { numRuns: Number(process.env.PARITY_RUNS ?? 400) });
  });
});

describe("where protocol.ts deliberately differs from the SDK", () => {
  test("a batch repeating an id is refused before any of it runs (the SDK ran both and answered one)", async () => {
    const leasesBefore = await services.db.$count(leases);
    const batch = (...ids: number[]) => ({ body: JSON.stringify(ids.map((id) => call("next_issue", {}, id))), headers: jsonHeaders });
    const answer = await ours(batch(7, 7));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: ErrorCode.InvalidRequest, message: expect.stringMatching(/repeats a request id/) } });
    expect(await services.db.$count(leases)).toBe(leasesBefore);
    // With distinct ids both run, answered in order, and every claim made is handed back.
    const distinct = await ours(batch(7, 8));
    expect(distinct.status).toBe(200);
    const replies = JSON.parse(distinct.body) as { id: number }[];
    expect(replies.map((r) => r.id)).toEqual([7, 8]);
    const claims = replies.filter((r) => JSON.stringify(r).includes("claimToken")).length;
    expect(claims).toBeGreaterThan(0);
    expect(await services.db.$count(leases)).toBe(leasesBefore + claims);
  });
});
