import { AsyncLocalStorage } from "node:async_hooks";
import crypto from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import type { Logger } from "../log.ts";
import { metrics } from "./index.ts";

/**
 * Who a request acts as, as far as its log line names them: the fields of a Principal
 * (server/context.ts) it reads, so the metrics import nothing of the domain, the context included.
 */
export interface NotedPrincipal {
  kind: "agent" | "human" | "system";
  orgId: string;
  userId: string | null;
  keyId: string | null;
  runtime: string | null;
}

/** The doors a request comes in by, as /metrics and the request log name them. */
export type Door = "mcp" | "dash" | "api-cli" | "auth" | "webhooks" | "static" | "other";

/**
 * What one request leaves in the request log line: filled in by whoever learns it while the
 * request runs (the edge, the principal a door acts as, the MCP tool wrapper). Ids, names and
 * codes only: never a key, a token, a cookie or decrypted content.
 */
export interface RequestRecord {
  readonly id: string;
  door: Door;
  orgId?: string;
  principal?: { kind: NotedPrincipal["kind"]; userId: string | null; keyId: string | null };
  runtime?: string | null;
  /** The MCP tools called (a JSON-RPC batch can call several). */
  tools?: string[];
  /** Error codes of refused tool calls. */
  codes?: string[];
}

// One store per process: the app's build bundles its own copy of this module beside main.ts's.
const storage: AsyncLocalStorage<RequestRecord> = ((globalThis as Record<symbol, unknown>)[Symbol.for("retasc.requestRecord")] ??=
  new AsyncLocalStorage<RequestRecord>()) as AsyncLocalStorage<RequestRecord>;

/** Notes the principal the request acts as (server/context.ts withPrincipal); outside a request, nothing. */
export function notePrincipal(principal: NotedPrincipal): void {
  const record = storage.getStore();
  if (!record || principal.kind === "system") return;
  record.orgId = principal.orgId;
  record.principal = { kind: principal.kind, userId: principal.userId, keyId: principal.keyId };
  record.runtime = principal.runtime;
}

/** Notes a tool call of the request (server/mcp/invoke.ts); `code` when it was refused. */
export function noteToolCall(tool: string, code: string | null): void {
  const record = storage.getStore();
  if (!record) return;
  (record.tools ??= []).push(tool);
  if (code) (record.codes ??= []).push(code);
}

export function doorOf(path: string | null): Door {
  if (path === null) return "other";
  if (path === "/mcp") return "mcp";
  if (path === "/dash" || path.startsWith("/dash/") || path.startsWith("/dash.")) return "dash";
  if (path.startsWith("/api/cli/")) return "api-cli";
  if (/^\/(?:api\/auth|auth|device|join)(?:[/.]|$)/.test(path)) return "auth";
  if (path.startsWith("/webhooks/")) return "webhooks";
  return "other";
}

/** A client's X-Request-Id is kept when it is short and plain (it is echoed and logged); else a new one. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,100}$/;

/**
 * Gives the request its id: the client's `X-Request-Id` when safe, else a new UUID, written into
 * the request's headers (so /mcp, which reads the raw headers, answers with the same one) and
 * onto the response.
 */
function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers["x-request-id"];
  if (typeof given === "string" && SAFE_REQUEST_ID.test(given)) {
    res.setHeader("x-request-id", given);
    return given;
  }
  const id = crypto.randomUUID();
  const raw = req.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) if (raw[i]!.toLowerCase() === "x-request-id") raw.splice(i, 2);
  raw.push("x-request-id", id);
  req.headers["x-request-id"] = id;
  res.setHeader("x-request-id", id);
  return id;
}

/**
 * The path as logged: never the query string (sign-in callbacks, email verification, device
 * approvals carry codes there), and no long segment (an invite code in /join/<code>, a
 * password-reset token, an id): those are logged as `:redacted`, so a code in a path cannot land
 * in the log either.
 */
function loggedPath(path: string | null): string {
  if (path === null) return "(invalid)";
  const shown = path.startsWith("/join/") ? "/join/:redacted" : path.replace(/[^/]{24,}/g, ":redacted");
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}

/**
 * Runs `handle` as one observed request: its latency goes to
 * `retasc_http_request_duration_seconds{door,status}` and one line to the log when the response
 * ends (or the client goes away first), with the request id, door, method, path without query,
 * status, duration, and what the doors noted (org, principal, runtime, tools, refusal codes).
 */
export function observeRequest(
  req: IncomingMessage,
  res: ServerResponse,
  log: Logger,
  path: string | null,
  handle: (record: RequestRecord) => void,
): void {
  const started = performance.now();
  const record: RequestRecord = { id: assignRequestId(req, res), door: doorOf(path) };
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    const ms = performance.now() - started;
    const status = res.writableFinished ? res.statusCode : 499;
    metrics.httpRequest(record.door, status, ms);
    log.info(
      {
        requestId: record.id,
        door: record.door,
        method: req.method,
        path: loggedPath(path),
        status,
        durationMs: Math.round(ms * 100) / 100,
        ...(record.orgId ? { orgId: record.orgId } : {}),
        ...(record.principal ? { principal: record.principal } : {}),
        ...(record.runtime ? { runtime: record.runtime } : {}),
        ...(record.tools ? { tool: record.tools.length === 1 ? record.tools[0] : record.tools } : {}),
        ...(record.codes ? { codes: record.codes } : {}),
      },
      "request",
    );
  };
  res.once("finish", finish);
  res.once("close", finish);
  storage.run(record, () => handle(record));
}
