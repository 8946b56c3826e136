import type { Redis } from "ioredis";
import { requireOnFirstUse } from "./on-first-use.ts";

const ioredis = requireOnFirstUse<typeof import("ioredis")>("ioredis");

/**
 * A connection to REDIS_URL for rate-limit counters shared by every instance. It fails fast while
 * Redis is away (no offline queue, one retry, 500 ms a command), so a limit falls back to its
 * in-process counter rather than holding a request. ioredis loads with the first one (decision 115).
 */
export function limitCounterRedis(url: string): Redis {
  const { Redis } = ioredis();
  return new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 500 });
}
