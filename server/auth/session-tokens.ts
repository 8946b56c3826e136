import type { BetterAuthOptions, DBAdapter, Where } from "better-auth";
import { sha256 } from "../crypto/index.ts";

/**
 * Session tokens at rest as SHA-256 digests, so a read of the database (a backup, the WAL)
 * yields no working credential: a digest sent as a cookie or `Authorization: Bearer` is
 * hashed again and matches nothing. better-auth 1.7.7 has no option for this, so it is done
 * at the adapter every better-auth query goes through (transactions included): a session
 * token written or looked up is hashed on the way in, and a row found by its token comes
 * back carrying the token it was found by, which is all better-auth reads back (to set the
 * cookie, to refresh or end the session). A row found any other way (by user) carries the
 * digest; the endpoints that would hand that to a client or match it against the current
 * token are turned off (SESSION_LISTING_PATHS). See docs/decisions/008-session-tokens-and-data-dir-at-rest.md.
 */
const SESSION = "session";
const TOKEN = "token";

/** better-auth endpoints that need stored tokens back: they list sessions or pick "the others" by token. */
export const SESSION_LISTING_PATHS = ["/list-sessions", "/revoke-other-sessions"];

export const sessionTokenDigest = (token: string) => sha256(token);

type AdapterFactory = (options: BetterAuthOptions) => DBAdapter<BetterAuthOptions>;

export function hashSessionTokens(factory: AdapterFactory): AdapterFactory {
  return (options) => hashing(factory(options));
}

function hashing<A extends object>(adapter: A): A {
  return new Proxy(adapter, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (property === "transaction") {
        return (run: (trx: object) => unknown) => value.call(target, (trx: object) => run(hashing(trx)));
      }
      return async (query: unknown, ...rest: unknown[]) => {
        if (!isSessionQuery(query)) return value.call(target, query, ...rest);
        const seen = new Map<string, string>();
        const result: unknown = await value.call(target, rewrite(query, seen), ...rest);
        return restore(result, seen);
      };
    },
  });
}

interface Query {
  model: string;
  where?: Where[];
  data?: Record<string, unknown>;
  update?: Record<string, unknown>;
}

function isSessionQuery(query: unknown): query is Query {
  return typeof query === "object" && query !== null && (query as Query).model === SESSION;
}

/** The query with every session token in it (written, set or matched) replaced by its digest. */
function rewrite(query: Query, seen: Map<string, string>): Query {
  const hash = (token: unknown) => {
    if (typeof token !== "string") return token;
    const digest = sessionTokenDigest(token);
    seen.set(digest, token);
    return digest;
  };
  const withToken = (fields?: Record<string, unknown>) =>
    fields && TOKEN in fields ? { ...fields, [TOKEN]: hash(fields[TOKEN]) } : fields;
  const matching = (value: Where["value"]) => (Array.isArray(value) ? value.map(hash) : hash(value)) as Where["value"];
  return {
    ...query,
    ...(query.where && {
      where: query.where.map((clause) => (clause.field === TOKEN ? { ...clause, value: matching(clause.value) } : clause)),
    }),
    ...(query.data && { data: withToken(query.data) }),
    ...(query.update && { update: withToken(query.update) }),
  };
}

/** Rows whose digest this query computed get their token back; other rows keep the digest. */
function restore(result: unknown, seen: Map<string, string>): unknown {
  if (Array.isArray(result)) return result.map((row) => restore(row, seen));
  if (typeof result !== "object" || result === null || !(TOKEN in result)) return result;
  const token = seen.get((result as Record<string, unknown>)[TOKEN] as string);
  return token === undefined ? result : { ...result, [TOKEN]: token };
}
