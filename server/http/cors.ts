import type { IncomingMessage, ServerResponse } from "node:http";
import type { Config } from "../config/index.ts";

/**
 * CORS for browser-based MCP clients (the MCP Inspector in a web page at another origin),
 * only for the origins in MCP_ALLOWED_ORIGINS and only on what such a client calls: /mcp, the
 * discovery documents and the OAuth endpoints a client calls itself (docs/decisions/023-oauth-cors.md).
 * Never with credentials: these answer bearer tokens and PKCE, not cookies. The consent page,
 * the authorize endpoint (a navigation, not a fetch) and every cookie-based route stay same-origin.
 */

/**
 * The OAuth endpoints a client POSTs to from its own page: token (code and refresh exchange),
 * registration (RFC 7591) and revocation (RFC 7009). They read no cookie, so the edge lets an
 * allowed origin's POST through its cross-site check.
 */
export const OAUTH_CLIENT_ENDPOINTS: ReadonlySet<string> = new Set(["/api/auth/oauth2/token", "/api/auth/oauth2/register", "/api/auth/oauth2/revoke"]);

/**
 * The discovery documents: public, their routes answer `Access-Control-Allow-Origin: *` for any
 * page. Only their preflights are answered here (the SDK sends MCP-Protocol-Version, which a
 * browser preflights).
 */
const DISCOVERY_PATHS: ReadonlySet<string> = new Set([
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
  "/.well-known/oauth-authorization-server",
  "/.well-known/oauth-authorization-server/api/auth",
]);
const CORS_PATHS: ReadonlySet<string> = new Set(["/mcp", ...OAUTH_CLIENT_ENDPOINTS, ...DISCOVERY_PATHS]);

const ALLOW_HEADERS = "authorization, content-type, mcp-protocol-version, mcp-session-id, last-event-id";
const EXPOSE_HEADERS = "www-authenticate, mcp-session-id";
const ALLOW_METHODS = "GET, POST, OPTIONS";

/**
 * Returns, for a request: the allowed Origin it came from when its path is one a browser client
 * may call cross-origin (the answer then carries that origin's CORS headers), else null. Every
 * answer on those paths varies by Origin, so a cache never hands one origin's answer to another.
 */
export function corsFor(config: Pick<Config, "MCP_ALLOWED_ORIGINS">) {
  const allowed = new Set(config.MCP_ALLOWED_ORIGINS);
  return (req: IncomingMessage, res: ServerResponse, path: string): string | null => {
    if (!CORS_PATHS.has(path)) return null;
    const origin = req.headers.origin;
    const document = DISCOVERY_PATHS.has(path);
    if (!document) res.setHeader("vary", "Origin");
    if (origin === undefined || !allowed.has(origin)) return null;
    if (!document) {
      res.setHeader("access-control-allow-origin", origin);
      res.setHeader("access-control-expose-headers", EXPOSE_HEADERS);
    }
    return origin;
  };
}

/** The answer to an allowed origin's preflight (OPTIONS with Access-Control-Request-Method). */
export function answerPreflight(res: ServerResponse, origin: string): void {
  res.writeHead(204, {
    "access-control-allow-origin": origin,
    vary: "Origin",
    "access-control-allow-methods": ALLOW_METHODS,
    "access-control-allow-headers": ALLOW_HEADERS,
    "access-control-max-age": "600",
  });
  res.end();
}
