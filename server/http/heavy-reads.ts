import type { Config } from "../config/index.ts";
import { metrics } from "../metrics/index.ts";
import { keyId, SESSION_COOKIE } from "./limits.ts";

/**
 * The largest reads of this process, at most HEAVY_READS_AT_ONCE at a time, the next
 * HEAVY_READS_QUEUED waiting in arrival order, and past that refused (503 RATE_LIMITED with
 * Retry-After) (decision 058). A Dash page's React render and a large MCP list reply's JSON are
 * each one synchronous piece of CPU on the one event loop; unbounded, eight readers put eight
 * such pieces ahead of every `/healthz` probe. Bounded, a probe (never gated) waits behind at most
 * the few that run. Per process: the event loop is the resource, whatever the cores.
 */
export interface HeavyReads {
  /**
   * A slot for `caller` (a person, a key, or a browser session or address where none is known
   * yet): resolves to its release (idempotent) once one is free, or at once to the refusal: the
   * queue is full (503), or this caller already holds its share of slots and places (429,
   * decision 061).
   */
  acquire(caller: string): Promise<(() => void) | HeavyReadsRefusal>;
}

export interface HeavyReadsRefusal {
  status: 429 | 503;
  message: string;
  hint: string;
  retryAfterSeconds: number;
}

/**
 * What is heavy: a Dash page or its data (GET or HEAD under /dash), but the endless event stream
 * and the downloads, which hold their response as long as the client reads; over /mcp, the tools
 * whose replies are pages of the largest lists.
 */
export function isHeavyPage(method: string, path: string): boolean {
  return (method === "GET" || method === "HEAD") && path.startsWith("/dash") && !STREAMED.test(path);
}
const STREAMED = /^\/dash\/(?:events|attachments\/|settings\/transfer\/export)/;
// The analytics read a whole period of the org's activity (decision 071): the same turns.
export const HEAVY_TOOLS: ReadonlySet<string> = new Set(["list_comments", "list_issues", "list_members", "list_invites", "list_attachments", "analytics_overview", "analytics_issues"]);

/**
 * Who a Dash request is, before anything has read its session: the session cookie's digest, or
 * the address for a browser without one. Digested so no session token is held in memory here.
 */
export function dashCaller(cookie: string | undefined, address: string): string {
  const session = SESSION_COOKIE.exec(cookie ?? "")?.[1];
  return session ? `session:${keyId(session)}` : `address:${address}`;
}

/** The refusals' words, the same on every door; a slot frees within a render, so a second is enough. */
export const HEAVY_READS_FULL: HeavyReadsRefusal = {
  status: 503,
  message: "The server is answering as many large pages as it queues.",
  hint: "Retry after 1 s.",
  retryAfterSeconds: 1,
};
export const HEAVY_READS_SHARE: HeavyReadsRefusal = {
  status: 429,
  message: "You have as many large pages being answered and waiting as one caller may.",
  hint: "Retry after 1 s, once one of them has been answered.",
  retryAfterSeconds: 1,
};

export function createHeavyReads(config: Pick<Config, "HEAVY_READS_AT_ONCE" | "HEAVY_READS_QUEUED" | "HEAVY_READS_PER_CALLER">): HeavyReads {
  let running = 0;
  const waiting: (() => void)[] = [];
  /** Slots held and places taken per caller; a caller at its share waits for none of them. */
  const held = new Map<string, number>();
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
    metrics.heavyReads(running, waiting.length);
  };
  /** Released once only, however often it is called; the caller's share is given back with it. */
  const slot = (caller: string) => {
    let holding = true;
    return () => {
      if (!holding) return;
      holding = false;
      const left = held.get(caller)! - 1;
      if (left === 0) held.delete(caller);
      else held.set(caller, left);
      release();
    };
  };
  return {
    acquire(caller) {
      const mine = held.get(caller) ?? 0;
      if (mine >= config.HEAVY_READS_PER_CALLER) return Promise.resolve(HEAVY_READS_SHARE);
      if (running < config.HEAVY_READS_AT_ONCE) {
        running++;
        held.set(caller, mine + 1);
        metrics.heavyReads(running, waiting.length);
        return Promise.resolve(slot(caller));
      }
      if (waiting.length >= config.HEAVY_READS_QUEUED) return Promise.resolve(HEAVY_READS_FULL);
      held.set(caller, mine + 1);
      return new Promise((resolve) => {
        // The slot passes straight from the one releasing it: `running` stays as it is.
        waiting.push(() => resolve(slot(caller)));
        metrics.heavyReads(running, waiting.length);
      });
    },
  };
}
