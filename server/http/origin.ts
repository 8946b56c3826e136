import type { Config } from "../config/index.ts";

/**
 * Where the app is reached, from configuration only, never from a request: the Host names it
 * serves, the origins it trusts for state-changing requests and the base of every absolute URL
 * it writes (discovery documents, invite links, agent prompts).
 *
 * With PUBLIC_URL set, that URL (its path kept: a proxy may mount the app under one) plus the
 * loopback names on PORT. Without it, in either mode, only the loopback names `localhost`,
 * `127.0.0.1` and `[::1]` on PORT: a browser sends those only for a page on this machine, so a
 * DNS-rebound name (evil.example resolving to 127.0.0.1) is refused. A server reached under any
 * other name must set PUBLIC_URL; until then it answers 421 saying so.
 */
export interface PublicOrigin {
  /** PUBLIC_URL without a trailing slash, path kept; null when unset. */
  readonly publicUrl: string | null;
  /** Host header values served, lowercase. */
  readonly hosts: ReadonlySet<string>;
  /** Origin header values trusted for state-changing requests (better-auth's trustedOrigins too). */
  readonly trustedOrigins: readonly string[];
}

const computed = new WeakMap<object, PublicOrigin>();

export function publicOrigin(config: Pick<Config, "PUBLIC_URL" | "PORT">): PublicOrigin {
  let known = computed.get(config);
  if (!known) {
    known = compute(config);
    computed.set(config, known);
  }
  return known;
}

function compute({ PUBLIC_URL, PORT }: Pick<Config, "PUBLIC_URL" | "PORT">): PublicOrigin {
  const loopback = ["localhost", "127.0.0.1", "[::1]"];
  const hosts = new Set(loopback.map((name) => `${name}:${PORT}`));
  // Clients leave out the scheme's default port.
  if (PORT === 80) for (const name of loopback) hosts.add(name);
  const origins = new Set([...hosts].map((host) => `http://${host}`));
  let publicUrl: string | null = null;
  if (PUBLIC_URL) {
    const url = new URL(PUBLIC_URL);
    publicUrl = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
    hosts.add(url.host.toLowerCase());
    origins.add(url.origin);
  }
  return { publicUrl, hosts, trustedOrigins: [...origins] };
}

/**
 * The base of absolute URLs in an answer to `request`: PUBLIC_URL, or without it the loopback
 * origin the request came to (localhost or 127.0.0.1, whichever the person typed; the edge has
 * already refused any other Host). Never a name taken unchecked from the request.
 */
export function publicBaseUrl(request: Request | URL | string, config: Pick<Config, "PUBLIC_URL" | "PORT">): string {
  const known = publicOrigin(config);
  if (known.publicUrl) return known.publicUrl;
  const url = new URL(typeof request === "string" || request instanceof URL ? request : request.url);
  return url.protocol === "http:" && known.hosts.has(url.host) ? url.origin : `http://localhost:${config.PORT}`;
}
