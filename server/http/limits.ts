import crypto from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import type { Config } from "../config/index.ts";
import { limitCounterRedis } from "../limit-redis.ts";
import type { Logger } from "../log.ts";
import { bearerKeyOf } from "../orgs/index.ts";
import { UPLOAD_FORM_SLACK_BYTES, UPLOAD_MAX_BYTES, UPLOAD_PATH } from "../transfer/import.ts";
import { createOrgBuckets, ORG_LIMIT } from "./org-limits.ts";
import { refuse, retryAfterSeconds } from "./refuse.ts";

/**
 * Abuse limits at the HTTP entry, before a request reaches a route: body size (413/411), and
 * per-minute rate limits (429 with Retry-After) per client IP, per agent key on /mcp, per IP on
 * sign-in and sign-up, per IP and per session on device-code look-ups, and per IP on failed /mcp
 * authentication; per hour per IP on OAuth client registration. Counters live in Redis when
 * REDIS_URL is set (shared by every instance), else in this process; while Redis is away each
 * instance counts in memory, so a Redis outage never blocks a request. The defaults sit far above
 * what a fleet does (docs/decisions/005-rate-limits.md); tests and operators set them lower.
 */
export interface RequestGuard {
  /**
   * Answers the request itself (413, 411, 429) and returns null, or lets it through. `path` is
   * its route path (path.ts): limits apply to what routing will serve, not to how
   * the target was spelt.
   */
  admit(req: IncomingMessage, res: ServerResponse, path: string): Promise<Admission | null>;
  close(): Promise<void>;
}

export interface Admission {
  /**
   * Set on /mcp while the address has used up its failed authentications: ms until it may fail
   * again. The request still runs if its key is valid (one misconfigured agent or a NAT must not
   * lock out every valid key behind the address); a request without a valid key gets 429.
   */
  readonly authFailureWait: number | null;
  /**
   * Set on /mcp when the guard did not know the key's org (its first call on this instance in a
   * minute): takes a token from the org's bucket once the key is looked up, null when taken, else
   * the ms to wait (server/http/org-limits.ts). Otherwise the guard has taken it, beside the key's count.
   */
  readonly takeOrgToken: ((orgId: string) => Promise<number | null>) | null;
}

const ADMITTED: Admission = { authFailureWait: null, takeOrgToken: null };
/** How long the guard trusts what it learnt of a key's org: a revoked key stops drawing on its org's bucket within this. */
const KEY_ORG_TTL_MS = 60_000;

const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/**
 * Password attempts and account creation: better-auth's endpoints and the pages' own form actions
 * (and their `.data` requests), matched on the route path, which is lowercase without a trailing slash.
 */
/** Open dynamic client registration (RFC 7591): each one stores a client, so an address may make only a few an hour. */
const OAUTH_REGISTER_PATH = "/api/auth/oauth2/register";
const SIGN_IN_PATH = /^\/(?:api\/auth\/sign-(?:in|up)(?:\/|$)|auth\/sign-(?:in|up)(?:\.data)?$)/;
/** The /device page (and its `.data` requests): a GET naming a user code looks it up, a POST decides one. */
const DEVICE_PATH = /^\/device(?:\.data)?$/;
/** The session cookie better-auth sets (`__Secure-` on https). */
export const SESSION_COOKIE = /(?:^|;\s*)(?:__Secure-)?better-auth\.session_token=([^;]+)/;

export function createRequestGuard(config: Config, log: Logger): RequestGuard {
  const redis = config.REDIS_URL ? limitCounterRedis(config.REDIS_URL) : null;
  let redisDown = false;
  redis?.on("error", (err) => {
    if (!redisDown) log.warn({ err }, "Redis unreachable: rate limits count per instance until it is back");
    redisDown = true;
  });
  redis?.on("ready", () => (redisDown = false));

  const limiter = (name: string, points: number, duration = 60): RateLimiterAbstract => {
    const memory = new RateLimiterMemory({ keyPrefix: name, points, duration });
    if (!redis) return memory;
    return new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${config.BULLMQ_PREFIX}:rl:${name}`,
      points,
      duration,
      rejectIfRedisNotReady: true,
      insuranceLimiter: memory,
    });
  };
  const perIp = limiter("ip", config.RATE_LIMIT_IP_PER_MIN);
  const perKey = limiter("key", config.RATE_LIMIT_KEY_PER_MIN);
  const signIn = limiter("signin", config.RATE_LIMIT_SIGNIN_PER_MIN);
  const deviceByAddress = limiter("device", config.RATE_LIMIT_DEVICE_PER_MIN);
  const deviceBySession = limiter("devicesession", config.RATE_LIMIT_DEVICE_PER_MIN);
  const authFailures = limiter("authfail", config.RATE_LIMIT_AUTH_FAILURES_PER_MIN);
  const registrations = limiter("oauthreg", config.RATE_LIMIT_OAUTH_REGISTER_PER_HOUR, 3600);
  const orgBuckets = createOrgBuckets(config, redis, log);
  /**
   * The org of each key digest seen authenticated lately, so its org's token is taken beside the
   * key's count, in the same round trip to Redis, rather than after the key's look-up.
   */
  const keyOrgs = new Map<string, { orgId: string; until: number }>();
  const orgOfKey = (digest: string): string | null => {
    const known = keyOrgs.get(digest);
    if (known && known.until > Date.now()) return known.orgId;
    keyOrgs.delete(digest);
    return null;
  };
  const takeOrgTokenFor = (digest: string) => (orgId: string) => {
    if (keyOrgs.size > 50_000) keyOrgs.clear();
    keyOrgs.set(digest, { orgId, until: Date.now() + KEY_ORG_TTL_MS });
    return orgBuckets!.take(orgId);
  };

  /** null when admitted, else how long until the limit lets this key through again. */
  const consume = async (rl: RateLimiterAbstract, key: string): Promise<number | null> => {
    try {
      await rl.consume(key);
      return null;
    } catch (error) {
      if (error instanceof RateLimiterRes) return error.msBeforeNext;
      log.warn({ err: error }, "rate limiter failed; request admitted");
      return null;
    }
  };
  /** Refuses while the IP has used up its failed authentications, without counting this request. */
  const exhausted = async (rl: RateLimiterAbstract, key: string): Promise<number | null> => {
    const state = await rl.get(key).catch(() => null);
    return state && state.consumedPoints >= rl.points ? state.msBeforeNext : null;
  };

  return {
    async admit(req, res, path) {
      const mcp = path === "/mcp";
      const method = req.method ?? "GET";
      if (BODY_METHODS.has(method)) {
        // /mcp admits a 10 MiB file in base64 for every tool (docs/decisions/013): the body is read
        // before its tool is known, and only after the key is authenticated (server/mcp/http.ts).
        // The Dash's export upload (a form post, or its .data fetch) is checked against its own limit by the page, which says it.
        const max = mcp ? config.MCP_MAX_BODY_BYTES : path === UPLOAD_PATH || path === `${UPLOAD_PATH}.data` ? UPLOAD_MAX_BYTES + UPLOAD_FORM_SLACK_BYTES : config.REQUEST_MAX_BODY_BYTES;
        const declared = req.headers["content-length"];
        if (declared !== undefined && !(Number(declared) <= max)) {
          refuse(res, mcp, 413, "PAYLOAD_TOO_LARGE", `The request body is larger than ${max} bytes.`, "Send a smaller body.", { connection: "close" });
          return null;
        }
        // The MCP transport reads with its own size limit; elsewhere a body must say its size.
        if (declared === undefined && req.headers["transfer-encoding"] !== undefined && !mcp) {
          refuse(res, mcp, 411, "LENGTH_REQUIRED", "A request body needs a Content-Length here.", "Send the body with Content-Length.", { connection: "close" });
          return null;
        }
      }
      const ip = clientIp(req, config.TRUST_PROXY_HOPS);
      const tooMany = (wait: number, what: string) => {
        const seconds = retryAfterSeconds(wait);
        refuse(res, mcp, 429, "RATE_LIMITED", `Too many ${what}.`, `Retry after ${seconds} s.`, { "retry-after": String(seconds) });
        return null;
      };
      const byAddress: Promise<{ wait: number | null; what: string }>[] = [
        consume(perIp, ip).then((wait) => ({ wait, what: "requests from your address" })),
      ];
      if (method === "POST" && SIGN_IN_PATH.test(path)) {
        byAddress.push(consume(signIn, ip).then((wait) => ({ wait, what: "sign-in attempts from your address" })));
      }
      if (method === "POST" && path === OAUTH_REGISTER_PATH) {
        byAddress.push(consume(registrations, ip).then((wait) => ({ wait, what: "OAuth client registrations from your address" })));
      }
      // Device codes are guessed by looking them up: per address, and per session wherever it comes from (decision 037).
      if (DEVICE_PATH.test(path) && (method === "POST" || /[?&]user_code=/.test(req.url ?? ""))) {
        byAddress.push(consume(deviceByAddress, ip).then((wait) => ({ wait, what: "device code look-ups from your address" })));
        const session = SESSION_COOKIE.exec(String(req.headers.cookie ?? ""))?.[1];
        if (session) byAddress.push(consume(deviceBySession, keyId(session)).then((wait) => ({ wait, what: "device code look-ups in your session" })));
      }
      const authFailureWait = mcp ? exhausted(authFailures, ip) : null;
      const refused = (await Promise.all(byAddress)).find((c) => c.wait !== null);
      if (refused) return tooMany(refused.wait!, refused.what);
      if (!mcp) return ADMITTED;
      const token = bearerKeyOf(req.headers.authorization);
      const failing = await authFailureWait;
      // Without a key there is nothing that could be valid.
      if (failing !== null && !token) return tooMany(failing, AUTH_FAILURES);
      // Counted whatever the failed-authentication state, or a key's owner could lift its own
      // limit by failing first; a key is counted only once its address is admitted.
      let takeOrgToken: Admission["takeOrgToken"] = null;
      if (token) {
        const digest = keyId(token);
        const orgId = orgBuckets ? orgOfKey(digest) : null;
        // Both at once: one round trip to Redis when the key's org is known.
        const [wait, orgWait] = await Promise.all([consume(perKey, digest), orgId ? orgBuckets!.take(orgId) : null]);
        if (wait !== null) return tooMany(wait, "requests with this agent key");
        if (orgWait != null) return tooMany(orgWait, ORG_LIMIT);
        if (orgBuckets && !orgId) takeOrgToken = takeOrgTokenFor(digest);
      }
      if (failing !== null) return { authFailureWait: failing, takeOrgToken };
      res.once("finish", () => {
        if (res.statusCode === 401) void consume(authFailures, ip);
      });
      return takeOrgToken ? { authFailureWait: null, takeOrgToken } : ADMITTED;
    },
    async close() {
      if (redis) await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/** What a 429 from the failed-authentication limit says it counts (server/mcp/http.ts says it too). */
export const AUTH_FAILURES = "failed authentications from your address";

/** Counters are kept under a hash of the key, never the key itself. */
/** A token's digest, to count or hold by it without keeping the token. */
export const keyId = (token: string) => crypto.createHash("sha256").update(token).digest("base64url").slice(0, 32);

/**
 * The client's address: the socket's peer, or behind `hops` trusted proxies the address the
 * outermost of them saw (counted from the right of X-Forwarded-For, which clients can prepend to).
 */
export function clientIp(req: IncomingMessage, hops: number): string {
  const peer = req.socket.remoteAddress ?? "unknown";
  if (hops <= 0) return peer;
  const forwarded = String(req.headers["x-forwarded-for"] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return forwarded[forwarded.length - hops] ?? forwarded[0] ?? peer;
}
