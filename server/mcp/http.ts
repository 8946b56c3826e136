import crypto from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readRequestBody } from "@modelcontextprotocol/sdk/server/requestBody.js";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import type { Principal, Services } from "../context.ts";
import type { Logger } from "../log.ts";
import { authenticateAgentKeyCached, bearerKeyOf, CI_KEY_PREFIX, touchKey } from "../orgs/index.ts";
import { baseUrlOf, mcpResource, PROTECTED_RESOURCE_PATH } from "../auth/oauth.ts";
import { authenticateOAuthToken, isOAuthAccessToken } from "../auth/oauth-tokens.ts";
import { publicOrigin } from "../http/origin.ts";
import { AUTH_FAILURES, type Admission } from "../http/limits.ts";
import { ORG_LIMIT } from "../http/org-limits.ts";
import { retryAfterSeconds } from "../http/refuse.ts";
import type { HeavyReads } from "../http/heavy-reads.ts";
import { exchange, rpcErrorReply, type McpPost, type McpReply } from "./protocol.ts";
import { issueSessionId, sessionSecret, verifySessionId } from "./session-id.ts";

export interface McpHttpDeps {
  services: Services;
  log: Logger;
  heavyReads?: HeavyReads;
}

/** What the endpoint reads of an HTTP request, whichever server received it. */
interface McpRequest extends McpPost {
  method: string;
}

/**
 * `/mcp`: Streamable HTTP, stateless. Anything but POST gets 405; then it checks the Origin
 * against the app's trusted origins and MCP_ALLOWED_ORIGINS (403; the edge has checked Host and
 * answered an allowed origin's preflight, server/http/cors.ts) and the Bearer credential, an
 * agent key or an OAuth access token (401 + WWW-Authenticate naming the protected resource
 * metadata, RFC 9728, where an MCP client finds how to sign in; or 429 while the address is over
 * its failed-authentication limit) and hands the POST to the protocol
 * exchange (server/mcp/protocol.ts), which keeps nothing between requests, so any instance
 * answers any call. Oversized bodies (413) and malformed JSON-RPC get protocol errors;
 * nothing here throws.
 */
async function answer(request: McpRequest, deps: McpHttpDeps, admission?: Admission): Promise<McpReply> {
  const requestId = requestIdOf(request.header("x-request-id"));
  try {
    if (request.method !== "POST") {
      return rpcError(405, -32000, "Method not allowed: this server is stateless, send JSON-RPC with POST.", requestId, {
        allow: "POST",
      });
    }
    const origin = request.header("origin");
    if (origin !== null && !publicOrigin(deps.services.config).trustedOrigins.includes(origin) && !deps.services.config.MCP_ALLOWED_ORIGINS.includes(origin)) {
      return rpcError(403, -32000, `Forbidden: origin ${origin.slice(0, 200)} may not call this server.`, requestId);
    }
    if (bearerKeyOf(request.header("authorization"))?.startsWith(CI_KEY_PREFIX)) {
      return rpcError(403, -32000, "Forbidden: a CI key (rtci_...) only attests CI results for its project (retasc verify, POST /api/ci/verify); agents call /mcp with their own key.", requestId);
    }
    const principal = await authenticate(request, deps.services);
    if (!principal) {
      const wait = admission?.authFailureWait;
      if (wait != null) return tooMany(AUTH_FAILURES, wait, requestId);
      const presented = /^bearer\s+\S/i.test(request.header("authorization") ?? "");
      const challenge = `Bearer realm="retasc", resource_metadata="${baseUrlOf(deps.services.config, request.header("host"))}${PROTECTED_RESOURCE_PATH}"`;
      return rpcError(
        401,
        -32000,
        presented
          ? "Unauthorized: the agent key or OAuth token is unknown, revoked, expired or retired, or its person is suspended."
          : "Unauthorized: send Authorization: Bearer <agent key> (rtsc_...), or sign in with OAuth (see WWW-Authenticate).",
        requestId,
        {
          "www-authenticate": presented
            ? `${challenge}, error="invalid_token", error_description="unknown, revoked, expired or retired credential"`
            : challenge,
        },
      );
    }
    const orgWait = admission?.takeOrgToken ? await admission.takeOrgToken(principal.orgId) : null;
    if (orgWait !== null) return tooMany(ORG_LIMIT, orgWait, requestId);
    recordKeyUse(principal.keyId!, deps, principal.orgFrozen);
    const session = sessionOf(request, principal, deps.services);
    if (session === undefined) {
      // The MCP transport's answer to a session it does not know: the client starts a new one with initialize.
      return rpcError(404, -32001, "Session not found: this Mcp-Session-Id was not issued to this key. Send initialize without it to start a new session.", requestId);
    }
    const secret = sessionSecretOf(deps.services);
    const reply = await exchange(request, {
      services: deps.services,
      principal: session ? { ...principal, sessionId: session } : principal,
      log: deps.log,
      heavyReads: deps.heavyReads,
      requestId,
      startSession: () => issueSessionId(secret, principal.keyId!).header,
    });
    reply.headers["x-request-id"] = requestId;
    return reply;
  } catch (err) {
    deps.log.error({ err, requestId }, "mcp request failed");
    return rpcError(503, ErrorCode.InternalError, `Server unavailable; retry shortly (request id ${requestId}).`, requestId);
  }
}

/** `/mcp` for a Fetch `Request` (in-process clients and tests). */
export async function handleMcpRequest(request: Request, deps: McpHttpDeps): Promise<Response> {
  const reply = await answer(
    {
      method: request.method,
      header: (name) => request.headers.get(name),
      body: async (maxBytes) => {
        const read = await readRequestBody(request, maxBytes);
        return read.tooLarge ? null : read.text;
      },
    },
    deps,
  );
  return new Response(reply.body, { status: reply.status, headers: reply.headers });
}

/**
 * `/mcp` straight on Node's HTTP server, ahead of React Router: the agents' hot path needs no
 * route matching and no Fetch Request and Response around it. Headers are read as a Fetch
 * `Headers` would join them.
 */
export async function handleMcpNodeRequest(
  req: IncomingMessage,
  res: ServerResponse,
  deps: McpHttpDeps,
  admission?: Admission,
): Promise<void> {
  const headers = joinedHeaders(req.rawHeaders);
  let cutShort = false;
  const header = (name: string) => headers.get(name) ?? null;
  const reply = await answer(
    {
      method: req.method ?? "GET",
      header,
      body: async (maxBytes) => {
        const text = await readNodeBody(req, maxBytes);
        cutShort = text === null;
        return text;
      },
    },
    deps,
    admission,
  );
  // The rest of a refused body is never read: the connection cannot carry another request.
  if (cutShort) reply.headers.connection = "close";
  res.writeHead(reply.status, reply.headers);
  res.end(reply.body ?? undefined);
}

function joinedHeaders(raw: string[]): Map<string, string> {
  const headers = new Map<string, string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const previous = headers.get(name);
    headers.set(name, previous === undefined ? raw[i + 1]! : `${previous}, ${raw[i + 1]!}`);
  }
  return headers;
}

const utf8 = new TextDecoder();

/** The body as the SDK's reader decodes it, or null as soon as more than maxBytes arrived. */
function readNodeBody(req: IncomingMessage, maxBytes: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const settle = (outcome: () => void) => {
      req.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
      outcome();
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxBytes) settle(() => resolve(null));
      else chunks.push(chunk);
    };
    const onEnd = () => settle(() => resolve(utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))));
    const onError = (error: Error) => settle(() => reject(error));
    const onClose = () => settle(() => reject(new Error("the request body ended early")));
    req.on("data", onData).on("end", onEnd).on("error", onError).on("close", onClose);
  });
}

/** When this process last recorded each key's use; the column only needs minute precision. */
const keyUseRecorded = new Map<string, number>();

/** Updates the key's last-used time at most once a minute per process, off the request path. */
function recordKeyUse(keyId: string, deps: McpHttpDeps, orgFrozen = false): void {
  // A frozen org's rows are not written (decision 110): its keys' use is recorded after the move.
  if (orgFrozen) return;
  const now = deps.services.clock.now();
  const last = keyUseRecorded.get(keyId);
  if (last !== undefined && now.getTime() - last < 60_000) return;
  if (keyUseRecorded.size > 50_000) keyUseRecorded.clear();
  keyUseRecorded.set(keyId, now.getTime());
  void touchKey(deps.services.db, keyId, now).catch((err: unknown) => deps.log.warn({ err }, "could not record key use"));
}

async function authenticate(request: McpRequest, services: Services): Promise<Principal | null> {
  const token = bearerKeyOf(request.header("authorization"));
  if (token === null) return null;
  if (!isOAuthAccessToken(token)) return authenticateAgentKeyCached(services.db, token, services.clock.now().getTime());
  const resource = mcpResource(baseUrlOf(services.config, request.header("host")));
  return authenticateOAuthToken(services.db, token, resource, services.clock.now());
}

const secrets = new WeakMap<Services["keyring"], string>();
function sessionSecretOf(services: Services): string {
  let secret = secrets.get(services.keyring);
  if (secret === undefined) secrets.set(services.keyring, (secret = sessionSecret(services.keyring)));
  return secret;
}

/**
 * The session a request names: its id, null when it names none (an anonymous client, its own
 * session for this one request), undefined when the header was not issued to this key.
 */
function sessionOf(request: McpRequest, principal: Principal, services: Services): string | null | undefined {
  const header = request.header("mcp-session-id");
  if (header === null) return null;
  return verifySessionId(sessionSecretOf(services), principal.keyId!, header) ?? undefined;
}

function requestIdOf(given: string | null): string {
  return given && /^[A-Za-z0-9._:-]{1,100}$/.test(given) ? given : crypto.randomUUID();
}

/** A 429 as the request guard answers it (server/http/refuse.ts): Retry-After, and the code and wait in `data`. */
function tooMany(what: string, waitMs: number, requestId: string): McpReply {
  const seconds = retryAfterSeconds(waitMs);
  return rpcError(429, -32000, `Too many ${what}. Retry after ${seconds} s.`, requestId, { "retry-after": String(seconds) }, { code: "RATE_LIMITED", retryAfter: seconds });
}

function rpcError(
  status: number,
  code: number,
  message: string,
  requestId: string,
  headers: Record<string, string> = {},
  data?: Record<string, unknown>,
): McpReply {
  return rpcErrorReply(status, code, message, { ...headers, "x-request-id": requestId }, data);
}
