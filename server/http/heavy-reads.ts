import type { Config } from "../config/index.ts";
import { metrics } from "../metrics/index.ts";

/**
 * The largest reads of this process, at most HEAVY_READS_AT_ONCE at a time, the next
 * HEAVY_READS_QUEUED waiting in arrival order, and past that refused (503 RATE_LIMITED with
 * Retry-After) (decision 058). A Dash page's React render and a large MCP list reply's JSON are
 * each one synchronous piece of CPU on the one event loop; unbounded, eight readers put eight
 * such pieces ahead of every `/healthz` probe. Bounded, a probe (never gated) waits behind at most
 * the few that run. Per process: the event loop is the resource, whatever the cores.
 */
export interface HeavyReads {
  /** A slot: resolves to its release (idempotent) once one is free, or to null at once when the queue is full. */
  acquire(): Promise<(() => void) | null>;
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
export const HEAVY_TOOLS: ReadonlySet<string> = new Set(["list_comments", "list_issues", "list_members", "list_invites", "list_attachments"]);

/** The refusal's words, the same on every door; a slot frees within a render, so a second is enough. */
export const HEAVY_READS_FULL = {
  message: "The server is answering as many large pages as it queues.",
  hint: "Retry after 1 s.",
  retryAfterSeconds: 1,
} as const;

export function createHeavyReads(config: Pick<Config, "HEAVY_READS_AT_ONCE" | "HEAVY_READS_QUEUED">): HeavyReads {
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
    metrics.heavyReads(running, waiting.length);
  };
  /** Released once only, however often it is called. */
  const slot = () => {
    let held = true;
    return () => {
      if (held) release();
      held = false;
    };
  };
  return {
    acquire() {
      if (running < config.HEAVY_READS_AT_ONCE) {
        running++;
        metrics.heavyReads(running, waiting.length);
        return Promise.resolve(slot());
      }
      if (waiting.length >= config.HEAVY_READS_QUEUED) return Promise.resolve(null);
      return new Promise((resolve) => {
        // The slot passes straight from the one releasing it: `running` stays as it is.
        waiting.push(() => resolve(slot()));
        metrics.heavyReads(running, waiting.length);
      });
    },
  };
}
