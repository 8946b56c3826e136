import type { ServerResponse } from "node:http";

/**
 * An edge refusal: a JSON-RPC error for /mcp (what an MCP client can read, its `data` carrying
 * the code and, with a Retry-After, `retryAfter` in seconds), else the app's coded error body
 * `{error: {code, message, hint}}` (with `retryAfter` too).
 */
export function refuse(
  res: ServerResponse,
  mcp: boolean,
  status: number,
  code: string,
  message: string,
  hint: string,
  headers: Record<string, string> = {},
): void {
  const retryAfter = headers["retry-after"] === undefined ? {} : { retryAfter: Number(headers["retry-after"]) };
  const body = mcp
    ? { jsonrpc: "2.0", error: { code: -32000, message: `${message} ${hint}`, data: { code, ...retryAfter } }, id: null }
    : { error: { code, message, hint, ...retryAfter } };
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
  res.end(JSON.stringify(body));
}

/** A wait in ms as a Retry-After: whole seconds, at least one. */
export const retryAfterSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));
