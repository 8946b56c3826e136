import { MAX_BATCH_SIZE, requestBodyTooLargeMessage } from "@modelcontextprotocol/sdk/server/requestBody.js";
import { safeParse } from "@modelcontextprotocol/sdk/server/zod-compat.js";
import { isJsonContentType } from "@modelcontextprotocol/sdk/shared/mediaType.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  isInitializeRequest,
  isTaskAugmentedRequestParams,
  JSONRPCMessageSchema,
  LATEST_PROTOCOL_VERSION,
  McpError,
  PingRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { billingEnabled } from "../usage/meter.ts";
import { HEAVY_TOOLS } from "../http/heavy-reads.ts";
import { invokeTool, type CallScope } from "./invoke.ts";
import { instructionsFor } from "./instructions.ts";
import { listedTools, serverInfo, toolsByName } from "./registry.ts";

/** What the exchange reads of an HTTP POST, whichever server received it. */
export interface McpPost {
  header(name: string): string | null;
  /** The body as text (UTF-8, a leading BOM dropped), or null once it exceeds maxBytes. */
  body(maxBytes: number): Promise<string | null>;
}

export interface McpReply {
  status: number;
  headers: Record<string, string>;
  body: string | null;
}

const capabilities = { tools: { listChanged: false } };

/**
 * One `POST /mcp` of a stateless Streamable HTTP server answering in JSON: what the SDK's
 * `WebStandardStreamableHTTPServerTransport` (`sessionIdGenerator: undefined`,
 * `enableJsonResponse: true`) and its low-level `Server` with our two tool handlers answer,
 * status, message and order alike, with the SDK's own schemas and messages
 * (protocol-parity.test.ts holds the two side by side). Building that server and transport
 * for every request, connecting and closing them, cost more CPU than a `get_issue` itself.
 * Requests of a batch run concurrently; the reply waits for all of them, in the batch's order.
 */
export async function exchange(post: McpPost, scope: CallScope): Promise<McpReply> {
  const accept = post.header("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) {
    return refused(scope, 406, -32000, "Not Acceptable: Client must accept both application/json and text/event-stream");
  }
  if (!isJsonContentType(post.header("content-type"))) {
    return refused(scope, 415, -32000, "Unsupported Media Type: Content-Type must be application/json");
  }
  const maxBytes = scope.services.config.MCP_MAX_BODY_BYTES;
  let raw: unknown;
  try {
    const text = Number(post.header("content-length")) > maxBytes ? null : await post.body(maxBytes);
    if (text === null) return refused(scope, 413, -32000, requestBodyTooLargeMessage(maxBytes));
    raw = JSON.parse(text);
  } catch {
    return refused(scope, 400, ErrorCode.ParseError, "Parse error: Invalid JSON");
  }
  if (Array.isArray(raw) && raw.length > MAX_BATCH_SIZE) {
    return refused(scope, 400, ErrorCode.InvalidRequest, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
  }
  let messages: JSONRPCMessage[];
  try {
    messages = (Array.isArray(raw) ? raw : [raw]).map((message) => JSONRPCMessageSchema.parse(message));
  } catch {
    return refused(scope, 400, ErrorCode.ParseError, "Parse error: Invalid JSON-RPC message");
  }
  const initializing = messages.some((m) => "method" in m && m.method === "initialize" && isInitializeRequest(m));
  if (initializing) {
    if (messages.length > 1) {
      return refused(scope, 400, ErrorCode.InvalidRequest, "Invalid Request: Only one initialization request is allowed");
    }
  } else {
    const version = post.header("mcp-protocol-version");
    if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      const supported = SUPPORTED_PROTOCOL_VERSIONS.join(", ");
      return refused(scope, 400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${supported})`);
    }
  }
  // The schema's union is strict: a message with both a method and an id is a request. Notifications
  // (nothing to cancel or report progress on in a stateless server) and responses need no answer.
  const requests = messages.filter((m): m is JSONRPCRequest => "method" in m && "id" in m);
  if (requests.length === 0) return { status: 202, headers: {}, body: null };
  // Here, unlike the SDK, a batch repeating an id is refused before anything runs: only one of
  // the calls could be answered, and the other's effect (a claim and its token) would be lost.
  if (requests.length > 1 && new Set(requests.map((r) => r.id)).size < requests.length) {
    return refused(scope, 400, ErrorCode.InvalidRequest, "Invalid Request: a batch repeats a request id; give every request its own id");
  }
  // A large list's reply is built and serialised in a slot of the heavy reads, so few are at once.
  const heavy = scope.heavyReads && requests.some((r) => r.method === "tools/call" && HEAVY_TOOLS.has(String(r.params?.name)));
  // The person behind the key is the caller: their agents share one share of the queue.
  const caller = scope.principal.userId ? `person:${scope.principal.userId}` : `key:${scope.principal.keyId}`;
  const slot = heavy ? await scope.heavyReads!.acquire(caller) : null;
  if (slot !== null && typeof slot !== "function") {
    const { status, message, hint, retryAfterSeconds } = slot;
    return rpcErrorReply(status, -32000, `${message} ${hint}`, { "retry-after": String(retryAfterSeconds) });
  }
  try {
    const responses = await Promise.all(requests.map((request) => answer(request, scope)));
    const session: Record<string, string> = initializing && scope.startSession ? { "mcp-session-id": scope.startSession() } : {};
    return {
      status: 200,
      headers: { "content-type": "application/json", ...session },
      body: JSON.stringify(responses.length === 1 ? responses[0] : responses),
    };
  } finally {
    slot?.();
  }
}

type RpcResponse = { result: unknown; jsonrpc: "2.0"; id: RequestId } | { jsonrpc: "2.0"; id: RequestId; error: RpcError };
type RpcError = { code: number; message: string; data?: unknown };

/** Never rejects: a thrown error becomes the JSON-RPC error of that request. */
async function answer(request: JSONRPCRequest, scope: CallScope): Promise<RpcResponse> {
  try {
    return { result: await handle(request, scope), jsonrpc: "2.0", id: request.id };
  } catch (caught) {
    const error = caught as { code?: unknown; message?: string; data?: unknown };
    return {
      jsonrpc: "2.0",
      id: request.id,
      error: {
        code: Number.isSafeInteger(error.code) ? (error.code as number) : ErrorCode.InternalError,
        message: error.message ?? "Internal error",
        ...(error.data !== undefined && { data: error.data }),
      },
    };
  }
}

const methods = new Set(["initialize", "ping", "tools/list", "tools/call"]);

async function handle(request: JSONRPCRequest, scope: CallScope): Promise<unknown> {
  if (!methods.has(request.method)) throw rpcError(ErrorCode.MethodNotFound, "Method not found");
  // Task-augmented execution is a capability this server does not declare.
  if (request.params?.task !== undefined && isTaskAugmentedRequestParams(request.params)) {
    throw new Error(`Server does not support task creation (required for ${request.method})`);
  }
  switch (request.method) {
    case "initialize": {
      const { protocolVersion } = parse(InitializeRequestSchema, request).params;
      return {
        protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(protocolVersion) ? protocolVersion : LATEST_PROTOCOL_VERSION,
        capabilities,
        serverInfo,
        instructions: await instructionsFor(scope.services, scope.principal),
      };
    }
    case "ping":
      parse(PingRequestSchema, request);
      return {};
    case "tools/list":
      return { tools: listedTools(billingEnabled(scope.services.config)) };
    default: {
      const call = safeParse(CallToolRequestSchema, request);
      if (!call.success) {
        const problem = call.error instanceof Error ? call.error.message : String(call.error);
        throw new McpError(ErrorCode.InvalidParams, `Invalid tools/call request: ${problem}`);
      }
      const tool = toolsByName.get(call.data.params.name);
      if (!tool) {
        // A JSON-RPC error, not a tool result: the call named nothing that exists.
        throw rpcError(ErrorCode.InvalidParams, `Unknown tool: ${call.data.params.name.slice(0, 100)}. Call tools/list for the tools.`);
      }
      // The arguments as sent: the parsed copy drops a `__proto__` key, which must be refused as unknown.
      return invokeTool(scope, tool, (request.params as { arguments?: Record<string, unknown> }).arguments ?? {});
    }
  }
}

/** Parses as the SDK's request dispatch does: a failure is thrown as is (a -32603 naming the issues). */
function parse<T>(schema: { parse(value: unknown): T }, value: unknown): T {
  const result = safeParse(schema as never, value);
  if (!result.success) throw result.error;
  return result.data as T;
}

const rpcError = (code: number, message: string) => Object.assign(new Error(message), { code });

function refused(scope: CallScope, status: number, code: number, message: string): McpReply {
  scope.log.debug({ err: message, requestId: scope.requestId }, "mcp protocol error");
  return rpcErrorReply(status, code, message);
}

/** A JSON-RPC error that answers no request in particular (`id: null`). */
export function rpcErrorReply(status: number, code: number, message: string, headers: Record<string, string> = {}, data?: Record<string, unknown>): McpReply {
  return {
    status,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", error: data ? { code, message, data } : { code, message }, id: null }),
  };
}
