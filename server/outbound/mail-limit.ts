import crypto from "node:crypto";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import type { Config } from "../config/index.ts";
import { DomainError } from "../errors.ts";
import { limitCounterRedis } from "../limit-redis.ts";

/**
 * Mail a person's action sends to an address they typed (an email confirmation code, an emailed
 * invite) could be aimed at anyone: each is counted per recipient address and per client address
 * (the request's, as the edge's limits count it, which the door passes) over an hour, so nobody can flood a victim's
 * inbox through this server. The counters are shared through Redis when there is one (as the
 * edge's are, decision 005) and kept in this process otherwise; a Redis outage never blocks a mail.
 */
interface MailLimiters {
  perAddress: RateLimiterAbstract;
  perIp: RateLimiterAbstract;
}

const byConfig = new WeakMap<Config, MailLimiters>();

function limitersFor(config: Config): MailLimiters {
  let limiters = byConfig.get(config);
  if (limiters) return limiters;
  const redis = config.REDIS_URL ? limitCounterRedis(config.REDIS_URL) : null;
  redis?.on("error", () => {});
  const limiter = (name: string, points: number): RateLimiterAbstract => {
    const memory = new RateLimiterMemory({ keyPrefix: `mail-${name}`, points, duration: 3600 });
    if (!redis) return memory;
    return new RateLimiterRedis({ storeClient: redis, keyPrefix: `${config.BULLMQ_PREFIX}:rl:mail-${name}`, points, duration: 3600, rejectIfRedisNotReady: true, insuranceLimiter: memory });
  };
  limiters = { perAddress: limiter("to", config.RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR), perIp: limiter("ip", config.RATE_LIMIT_MAIL_PER_IP_PER_HOUR) };
  byConfig.set(config, limiters);
  return limiters;
}

/** ms until `rl` admits `key` again, or null when this one is admitted (and counted). */
async function wait(rl: RateLimiterAbstract, key: string): Promise<number | null> {
  try {
    await rl.consume(key);
    return null;
  } catch (error) {
    return error instanceof RateLimiterRes ? error.msBeforeNext : null;
  }
}

/**
 * Counts one mail to `to` and throws RATE_LIMITED when that address, or the client sending the
 * request, has had its share this hour. Addresses are counted under a hash, never as written.
 */
export async function admitMail(config: Config, to: string, clientAddress: string | null): Promise<void> {
  const { perAddress, perIp } = limitersFor(config);
  const address = crypto.createHash("sha256").update(to.trim().toLowerCase()).digest("base64url").slice(0, 32);
  const [toWait, ipWait] = await Promise.all([wait(perAddress, address), clientAddress ? wait(perIp, clientAddress) : null]);
  const ms = Math.max(toWait ?? 0, ipWait ?? 0);
  if (toWait === null && ipWait === null) return;
  const minutes = Math.max(1, Math.ceil(ms / 60_000));
  throw new DomainError(
    "RATE_LIMITED",
    toWait !== null ? "this address has been sent enough mail from Retasc for now" : "too many mails sent from your address",
    `Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`,
    { retryAfterSeconds: Math.ceil(ms / 1000) },
  );
}
