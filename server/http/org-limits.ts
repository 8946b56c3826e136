import type { Redis } from "ioredis";
import type { Config } from "../config/index.ts";
import type { Logger } from "../log.ts";

/**
 * One token bucket per org over every /mcp call of its keys and tokens, dispatch included
 * (decision 075): RATE_LIMIT_ORG_PER_SEC tokens a second, up to RATE_LIMIT_ORG_BURST saved up;
 * a call takes one or is refused until one has accrued. In Redis when there is one (every
 * instance draws from the same bucket), counted on Redis's clock; in this process otherwise, and
 * while Redis is away, as the per-key limits do (decision 005). 0 turns it off.
 */
export interface OrgBuckets {
  /** Takes a token from `orgId`'s bucket: null when taken, else the ms until one will be there. */
  take(orgId: string): Promise<number | null>;
}

/**
 * The bucket as a hash {t: last refill in ms, n: tokens}: refilled, charged and given a TTL in
 * one script, so the read and the write cannot interleave with another instance's. A refused
 * call takes nothing. Returns 0 when a token was taken, else the ms until one will be.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local saved = redis.call('HMGET', KEYS[1], 't', 'n')
local tokens = tonumber(saved[2]) or burst
local last = tonumber(saved[1]) or now
if now > last then tokens = math.min(burst, tokens + (now - last) * rate / 1000) end
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) * 1000 / rate) end
redis.call('HSET', KEYS[1], 't', tostring(math.max(now, last)), 'n', tostring(tokens))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return wait
`;

type OrgConfig = Pick<Config, "RATE_LIMIT_ORG_PER_SEC" | "RATE_LIMIT_ORG_BURST" | "BULLMQ_PREFIX">;

export function createOrgBuckets(config: OrgConfig, redis: Redis | null, log: Logger): OrgBuckets | null {
  const rate = config.RATE_LIMIT_ORG_PER_SEC;
  if (rate === 0) return null;
  const burst = Math.max(1, config.RATE_LIMIT_ORG_BURST);
  const memory = memoryBuckets(rate, burst);
  if (!redis) return memory;
  redis.defineCommand("retascOrgTake", { numberOfKeys: 1, lua: TAKE });
  const take = (redis as Redis & { retascOrgTake(key: string, rate: number, burst: number): Promise<number> }).retascOrgTake.bind(redis);
  const prefix = `${config.BULLMQ_PREFIX}:rl:org:`;
  return {
    async take(orgId) {
      try {
        const wait = await take(`${prefix}${orgId}`, rate, burst);
        return wait > 0 ? wait : null;
      } catch (err) {
        // Redis away or slow: this instance counts alone until it answers (decision 005).
        log.debug({ err }, "org bucket counted in memory");
        return memory.take(orgId);
      }
    },
  };
}

/** The same bucket in this process: the embedded mode's only one, and the fallback while Redis is away. */
export function memoryBuckets(rate: number, burst: number, now: () => number = Date.now): OrgBuckets {
  const buckets = new Map<string, { t: number; n: number }>();
  // A bucket left alone this long is full again, which is what a missing one means.
  const fullAfter = (burst * 1000) / rate;
  let swept = now();
  return {
    async take(orgId) {
      const at = now();
      if (at - swept > Math.max(fullAfter, 60_000)) {
        for (const [org, b] of buckets) if (at - b.t >= fullAfter) buckets.delete(org);
        swept = at;
      }
      const b = buckets.get(orgId) ?? { t: at, n: burst };
      if (at > b.t) b.n = Math.min(burst, b.n + ((at - b.t) * rate) / 1000);
      b.t = Math.max(at, b.t);
      buckets.set(orgId, b);
      if (b.n >= 1) {
        b.n -= 1;
        return null;
      }
      return Math.ceil(((1 - b.n) * 1000) / rate);
    },
  };
}

/** What a call refused by its org's bucket is told (the guard and the /mcp endpoint say the same). */
export const ORG_LIMIT = "requests from your organization (its limit across all of its keys and tokens)";
