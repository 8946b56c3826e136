import type { ServerResponse } from "node:http";

/**
 * An edge refusal: a JSON-RPC error for /mcp (what an MCP client can read), else the app's
 * coded error body `{error: {code, message, hint}}`.
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
  const body = mcp
    ? { jsonrpc: "2.0", error: { code: -32000, message: `${message} ${hint}` }, id: null }
    : { error: { code, message, hint } };
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
  res.end(JSON.stringify(body));
}
