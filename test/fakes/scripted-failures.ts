import type http from "node:http";

/** What a fake REST API answers a request with instead of its answer: a 429 with Retry-After, or a 5xx. */
export type ScriptedFailure = { status: 429; retryAfterSeconds: number } | { status: 500 | 502 | 503 };

/** The part of a fake REST API (Jira, Asana, Shortcut) that tests script: failures, counted over its API requests. */
export interface ScriptedFailures {
  /** API requests answered, in order (method, path and query; never a credential). */
  requests: string[];
  /** The `n`th API request from now (1-based) is answered with this status. */
  failAt(n: number, reply: ScriptedFailure): void;
  /** How many requests a scripted failure answered. */
  failures: number;
}

/**
 * Scripted failures for a fake: `answer` records an API request and, when a failure was scripted
 * for it, answers it through `fail` (in the service's own error shape) and returns true.
 */
export function scriptedFailures(fail: (res: http.ServerResponse, reply: ScriptedFailure) => void) {
  const scripted = new Map<number, ScriptedFailure>();
  let seen = 0;
  const state: ScriptedFailures & { answer(req: http.IncomingMessage, url: URL, res: http.ServerResponse): boolean } = {
    requests: [],
    failures: 0,
    failAt(n, reply) {
      scripted.set(seen + n, reply);
    },
    answer(req, url, res) {
      state.requests.push(`${req.method} ${url.pathname}${url.search}`);
      const reply = scripted.get(++seen);
      if (!reply) return false;
      state.failures++;
      fail(res, reply);
      return true;
    },
  };
  return state;
}

/** A JSON answer with the service's own content type. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, contentType = "application/json; charset=utf-8") {
  res.writeHead(status, { "content-type": contentType, ...headers });
  res.end(JSON.stringify(body));
}
