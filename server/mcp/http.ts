import crypto from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { z } from "zod";
import type { Principal, Services } from "../context.ts";
import type { Logger } from "../log.ts";
import { authenticateAgentKey, touchKey } from "../orgs/index.ts";
import { invokeTool, type CallScope } from "./invoke.ts";
import { listedTools, serverInfo, serverInstructions, toolsByName } from "./registry.ts";

export interface McpHttpDeps {
  services: Services;
  log: Logger;
}

/**
 * `POST /mcp`: Streamable HTTP, stateless. Checks the Origin (403), the Bearer key
 * (401 + WWW-Authenticate), then hands the request to a fresh SDK server and transport
 * so no state is shared between callers or instances. The transport answers oversized
 * bodies (413) and malformed JSON-RPC with protocol errors; nothing here throws.
 */
export async function handleMcpRequest(request: Request, deps: McpHttpDeps): Promise<Response> {
  const requestId = requestIdOf(request);
  try {
    if (request.method !== "POST") {
      return rpcError(405, -32000, "Method not allowed: this server is stateless, send JSON-RPC with POST.", requestId, {
        allow: "POST",
      });
    }
    const origin = request.headers.get("origin");
    if (origin !== null && !allowedOrigins(request, deps.services).has(origin)) {
      return rpcError(403, -32000, `Forbidden: origin ${origin.slice(0, 200)} may not call this server.`, requestId);
    }
    const principal = await authenticate(request, deps.services);
    if (!principal) {
      const presented = /^bearer\s+\S/i.test(request.headers.get("authorization") ?? "");
      return rpcError(
        401,
        -32000,
        presented
          ? "Unauthorized: the agent key is unknown, revoked or retired, or its person is suspended."
          : "Unauthorized: send Authorization: Bearer <agent key> (rtsc_...).",
        requestId,
        {
          "www-authenticate": presented
            ? 'Bearer realm="retasc", error="invalid_token", error_description="unknown, revoked or retired key"'
            : 'Bearer realm="retasc"',
        },
      );
    }
    recordKeyUse(principal.keyId!, deps);
    const response = await serve(request, { services: deps.services, principal, log: deps.log, requestId });
    response.headers.set("x-request-id", requestId);
    return response;
  } catch (err) {
    deps.log.error({ err, requestId }, "mcp request failed");
    return rpcError(503, ErrorCode.InternalError, `Server unavailable; retry shortly (request id ${requestId}).`, requestId);
  }
}

/**
 * Handlers are registered under method-only schemas: the SDK's own schemas would throw
 * during dispatch and answer a malformed `tools/call` with -32603 (internal error)
 * instead of the -32602 (invalid params) its tools/call wrapper gives.
 */
const listToolsEnvelope = z.object({ method: z.literal("tools/list") });
const callToolEnvelope = z.object({ method: z.literal("tools/call"), params: z.unknown() });

/**
 * One JSON Schema validator for every per-request server: the SDK would otherwise build
 * a fresh Ajv instance (with its formats) on each request, a large share of the CPU a
 * round trip costs. Ours never validates anything with it (no elicitation).
 */
const sharedValidator = new AjvJsonSchemaValidator();

async function serve(request: Request, scope: CallScope): Promise<Response> {
  const server = new Server(serverInfo, {
    capabilities: { tools: { listChanged: false } },
    instructions: serverInstructions,
    jsonSchemaValidator: sharedValidator,
  });
  server.setRequestHandler(listToolsEnvelope, () => ({ tools: listedTools() }));
  server.setRequestHandler(callToolEnvelope, async (request) => {
    // The SDK has already checked the request against CallToolRequestSchema (-32602 if not).
    const call = CallToolRequestSchema.parse(request);
    const tool = toolsByName.get(call.params.name);
    if (!tool) {
      // A JSON-RPC error (-32602), not a tool result: the call named nothing that exists.
      throw Object.assign(new Error(`Unknown tool: ${call.params.name.slice(0, 100)}. Call tools/list for the tools.`), {
        code: ErrorCode.InvalidParams,
      });
    }
    return invokeTool(scope, tool, call.params.arguments ?? {});
  });
  server.onerror = (err) => scope.log.debug({ err: err.message, requestId: scope.requestId }, "mcp protocol error");
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: scope.services.config.MCP_MAX_BODY_BYTES,
  });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request);
  } finally {
    await server.close();
  }
}

/** When this process last recorded each key's use; the column only needs minute precision. */
const keyUseRecorded = new Map<string, number>();

/** Updates the key's last-used time at most once a minute per process, off the request path. */
function recordKeyUse(keyId: string, deps: McpHttpDeps): void {
  const now = deps.services.clock.now();
  const last = keyUseRecorded.get(keyId);
  if (last !== undefined && now.getTime() - last < 60_000) return;
  if (keyUseRecorded.size > 50_000) keyUseRecorded.clear();
  keyUseRecorded.set(keyId, now.getTime());
  void touchKey(deps.services.db, keyId, now).catch((err: unknown) => deps.log.warn({ err }, "could not record key use"));
}

async function authenticate(request: Request, services: Services): Promise<Principal | null> {
  const match = /^bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "");
  if (!match) return null;
  return authenticateAgentKey(services.db, match[1]!);
}

/** The app's own origin: PUBLIC_URL when set, and the origin this request was addressed to. */
function allowedOrigins(request: Request, services: Services): Set<string> {
  const origins = new Set([new URL(request.url).origin]);
  if (services.config.PUBLIC_URL) origins.add(new URL(services.config.PUBLIC_URL).origin);
  return origins;
}

function requestIdOf(request: Request): string {
  const given = request.headers.get("x-request-id");
  return given && /^[A-Za-z0-9._:-]{1,100}$/.test(given) ? given : crypto.randomUUID();
}

function rpcError(
  status: number,
  code: number,
  message: string,
  requestId: string,
  headers: Record<string, string> = {},
): Response {
  return Response.json(
    { jsonrpc: "2.0", error: { code, message }, id: null },
    { status, headers: { ...headers, "x-request-id": requestId } },
  );
}
