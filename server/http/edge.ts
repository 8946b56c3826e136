import type { IncomingMessage, ServerResponse } from "node:http";
import type { Config } from "../config/index.ts";
import type { Logger } from "../log.ts";
import { answerPreflight, corsFor, OAUTH_CLIENT_ENDPOINTS } from "./cors.ts";
import { answerMetrics } from "./metrics.ts";
import { observeRequest, type RequestRecord } from "../metrics/requests.ts";
import { dashCaller, isHeavyPage, type HeavyReads } from "./heavy-reads.ts";
import type { Admission, RequestGuard } from "./limits.ts";
import { clientIp } from "./limits.ts";
import { newNonce, securityHeaders } from "./headers.ts";
import { publicOrigin } from "./origin.ts";
import { routePath } from "./path.ts";
import { refuse } from "./refuse.ts";
import { runInScope } from "./scope.ts";

/** The handlers behind the edge. */
export interface EdgeRoutes {
  /** Answers a built client file and returns true, or returns false. */
  serveStatic(req: IncomingMessage, res: ServerResponse): boolean;
  mcp(req: IncomingMessage, res: ServerResponse, admission: Admission): Promise<void>;
  app(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The request listener: every request passes here first, in this order. An exception anywhere
 * below becomes this request's 500, logged once; no request can end the process.
 *
 * 0. Every request gets its id (the client's safe X-Request-Id, or a new one), its latency in
 *    /metrics per door and one log line when it ends (server/metrics/requests.ts).
 * 1. Host must name this app (server/http/origin.ts): 421 otherwise, so a DNS-rebound name
 *    reaches nothing. /healthz and /metrics are exempt, for probes and scrapers that address the
 *    instance by its own IP. /metrics is answered here (server/http/metrics.ts).
 * 2. The target must have a route path (server/http/path.ts) and no NUL (`%00`): 400 otherwise.
 * 3. Security headers (server/http/headers.ts); CORS headers for an MCP_ALLOWED_ORIGINS origin on
 *    /mcp, the OAuth discovery documents and the OAuth client endpoints, whose preflights are
 *    answered here (server/http/cors.ts).
 * 4. A state-changing request must come from a trusted origin: 403 when its Origin is another
 *    (or "null"), or, without Origin, when Sec-Fetch-Site says cross-site. Clients that are not
 *    browsers send neither and go on. /mcp checks its Origin itself (a JSON-RPC answer);
 *    /webhooks/* are verified by signature; an allowed origin may POST to the OAuth token,
 *    registration and revocation endpoints, which read no cookie.
 * 5. Static files, then the request guard (server/http/limits.ts), then /mcp or React Router; a
 *    Dash page waits for a slot of the heavy reads first (server/http/heavy-reads.ts), /mcp
 *    takes one for a large list's tool (server/mcp/protocol.ts), /healthz never does.
 */
export function createEdge(config: Config, log: Logger, guard: RequestGuard, routes: EdgeRoutes, heavyReads: HeavyReads) {
  const { hosts, trustedOrigins, publicUrl } = publicOrigin(config);
  const trusted = new Set(trustedOrigins);
  // Host names are case-insensitive; clients send them in lowercase, so that is tried first.
  const servesHost = (host: string | undefined) => host !== undefined && (hosts.has(host) || hosts.has(host.toLowerCase()));
  const setHeaders = securityHeaders(config);
  const cors = corsFor(config);

  const fail = (req: IncomingMessage, res: ServerResponse, err: unknown) => {
    // The path only: a query string can carry a code.
    log.error({ err, method: req.method, path: req.url?.split("?")[0]?.slice(0, 200) }, "request failed");
    if (res.headersSent) res.destroy();
    else refuse(res, false, 500, "UNAVAILABLE", "The request failed on the server.", "Retry shortly; the error has been logged.");
  };

  return (req: IncomingMessage, res: ServerResponse): void => {
    try {
      const path = routePath(req.url);
      observeRequest(req, res, log, path, (record) => serve(req, res, path, record));
    } catch (err) {
      fail(req, res, err);
    }
  };

  function serve(req: IncomingMessage, res: ServerResponse, path: string | null, record: RequestRecord): void {
    const mcp = path === "/mcp";
    if (path === "/metrics") {
      void answerMetrics(req, res, config).catch((err) => fail(req, res, err));
      return;
    }
    if (path !== "/healthz" && !servesHost(req.headers.host)) {
      return refuse(res, mcp, 421, "FORBIDDEN", `This server does not answer for the host ${String(req.headers.host ?? "(none)").slice(0, 200)}.`,
        publicUrl ? `Use ${publicUrl}.` : "Set PUBLIC_URL to the URL people and agents use to reach it.");
    }
    if (path === null) {
      return refuse(res, false, 400, "INVALID_INPUT", "The request target is not a valid path.", "Send an origin-form path with valid percent-encoding.");
    }
    // Every route's path and query at once, before any of them runs: a NUL is text no column can hold.
    if (req.url?.includes("%00") || req.url?.includes("\0")) {
      return refuse(res, mcp, 400, "INVALID_INPUT", "The request target carries a NUL character (%00), which no text can hold.", "Remove it from the path and the query.");
    }
    const method = req.method ?? "GET";
    const corsOrigin = cors(req, res, path);
    if (corsOrigin !== null && method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
      setHeaders(res, null);
      return answerPreflight(res, corsOrigin);
    }
    if (mcp) {
      setHeaders(res, null);
      void guard.admit(req, res, path).then((admission) => admission && routes.mcp(req, res, admission)).catch((err) => fail(req, res, err));
      return;
    }
    const nonce = newNonce();
    setHeaders(res, nonce);
    const clientEndpoint = corsOrigin !== null && OAUTH_CLIENT_ENDPOINTS.has(path);
    if (!SAFE_METHODS.has(method) && !path.startsWith("/webhooks/") && !clientEndpoint && crossSite(req, trusted)) {
      return refuse(res, false, 403, "FORBIDDEN", "This request came from another site.", "Submit the form from this app's own pages.");
    }
    if (routes.serveStatic(req, res)) {
      record.door = "static";
      return;
    }
    const address = clientIp(req, config.TRUST_PROXY_HOPS);
    const app = () => runInScope({ nonce, address }, () => routes.app(req, res, path));
    void guard
      .admit(req, res, path)
      .then(async (admission) => {
        if (!admission) return;
        if (!isHeavyPage(method, path)) return app();
        const release = await heavyReads.acquire(dashCaller(req.headers.cookie, address));
        if (typeof release !== "function") {
          const { status, message, hint, retryAfterSeconds } = release;
          return refuse(res, false, status, "RATE_LIMITED", message, hint, { "retry-after": String(retryAfterSeconds) });
        }
        // A client that reads slowly (or not at all) keeps its answer coming but not its slot: once
        // the answer waits on the client, the page is rendered.
        const stalled = setInterval(() => res.writableNeedDrain && release(), 50);
        try {
          // A client that left while it waited is answered by nobody: its slot goes to the next.
          if (!res.destroyed) await app();
        } finally {
          clearInterval(stalled);
          release();
        }
      })
      .catch((err) => fail(req, res, err));
  }
}

function crossSite(req: IncomingMessage, trusted: ReadonlySet<string>): boolean {
  const origin = req.headers.origin;
  if (origin !== undefined) return !trusted.has(origin);
  const site = req.headers["sec-fetch-site"];
  return site !== undefined && site !== "same-origin" && site !== "none";
}
