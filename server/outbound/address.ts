import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Agent, buildConnector } from "undici";
import type { Config } from "../config/index.ts";
import { invalidInput } from "../errors.ts";
import { requireOnFirstUse } from "../on-first-use.ts";

/**
 * The one guard for URLs people and orgs type that the server then calls (a self-hosted GitLab's
 * base URL today; importer sites and webhooks tomorrow): they must stay outside. A URL is called
 * only over https and only at public addresses, decided on every address its name resolves to
 * when the socket is opened (so a name re-pointed after the check reaches nothing), and again
 * for every redirect, which may not leave the host the URL named (the credentials entered for it
 * go nowhere else). An operator lets a private host through by listing its `host:port` in
 * RETASC_OUTBOUND_ALLOW_HOSTS (the tests' local fakes; a GitLab on the office network).
 */

/** A call the guard would not make: permanent, and the same whether or not anything listens there. */
export class OutboundRefused extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "OutboundRefused";
  }
}

const v4 = new net.BlockList();
for (const [prefix, bits] of [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata (169.254.169.254)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) {
  v4.addSubnet(prefix, bits, "ipv4");
}

const v6 = new net.BlockList();
for (const [prefix, bits] of [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["100::", 64], // discard
  ["2001::", 32], // Teredo: tunnels to an IPv4 address of anyone's choosing
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const) {
  v6.addSubnet(prefix, bits, "ipv6");
}

/** The 16 bytes of an IPv6 address (already known to be one). */
function bytesOf(address: string): number[] {
  let text = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const groups = (part: string | undefined) => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
  const left = groups(head);
  const right = groups(tail);
  const all = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/** The IPv4 address an IPv6 one carries and is routed to: mapped, compatible, NAT64 or 6to4. */
function embeddedV4(address: string): string | null {
  const b = bytesOf(address);
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4of = (at: number) => b.slice(at, at + 4).join(".");
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4of(12); // ::ffff:a.b.c.d
  if (zeros(0, 12)) return v4of(12); // ::a.b.c.d (deprecated "compatible")
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return v4of(12); // 64:ff9b::/96
  if (b[0] === 0x20 && b[1] === 0x02) return v4of(2); // 2002::/16
  return null;
}

/** Whether an IP address (either family) is on the public internet, decided without connecting. */
export function isPublicAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const family = net.isIP(ip);
  if (family === 4) return !v4.check(ip, "ipv4");
  if (family !== 6) return false;
  const inner = embeddedV4(ip);
  if (inner !== null) return isPublicAddress(inner);
  return !v6.check(ip, "ipv6");
}

const defaultPort = (protocol: string) => (protocol === "https:" ? "443" : "80");

/** Whether the operator allowed this URL's `host:port` (RETASC_OUTBOUND_ALLOW_HOSTS). */
function allowed(config: Pick<Config, "outboundAllowHosts">, hostname: string, port: string, protocol: string): boolean {
  return config.outboundAllowHosts.has(`${hostname}:${port || defaultPort(protocol)}`);
}

/** Why `raw` may not be called before any lookup (scheme, credentials, a private literal), or null. */
function refusalOf(config: Pick<Config, "outboundAllowHosts">, url: URL): string | null {
  if (url.protocol !== "https:" && url.protocol !== "http:") return "only https URLs can be called";
  if (url.username || url.password) return "a URL may not carry a user name or password";
  if (allowed(config, url.hostname, url.port, url.protocol)) return null;
  if (url.protocol !== "https:") return "only https URLs can be called (http only for a host in RETASC_OUTBOUND_ALLOW_HOSTS)";
  if (net.isIP(url.hostname.replace(/^\[|\]$/g, "")) && !isPublicAddress(url.hostname)) return `${url.hostname} is not a public address`;
  return null;
}

const ALLOW_HINT = "Use the https URL of a server reachable on the internet; an operator can allow a private host with RETASC_OUTBOUND_ALLOW_HOSTS=host:port.";

/**
 * Checks a URL a person entered before it is stored: INVALID_INPUT naming `field` when it is not
 * https to a public address (every address its name resolves to now) and not allowed by the
 * operator. Calls go through `outboundAgent`, which checks again at every connection.
 */
export async function requireOutboundUrl(config: Pick<Config, "outboundAllowHosts">, raw: string, field: string): Promise<void> {
  const url = URL.canParse(raw) ? new URL(raw) : null;
  const refused = (reason: string) => invalidInput(`${field}: ${reason}`, ALLOW_HINT);
  if (!url) throw refused("not a URL");
  const reason = refusalOf(config, url);
  if (reason) throw refused(reason);
  if (allowed(config, url.hostname, url.port, url.protocol) || net.isIP(url.hostname.replace(/^\[|\]$/g, ""))) return;
  const addresses = await dns.promises.lookup(url.hostname, { all: true, verbatim: true }).catch(() => null);
  if (!addresses?.length) throw refused(`${url.hostname} does not resolve`);
  const inside = addresses.find((a) => !isPublicAddress(a.address));
  if (inside) throw refused(`${url.hostname} resolves to ${inside.address}, which is not a public address`);
}

/** dns.lookup that fails when any address of the name is not public. */
function publicLookup(hostname: string, options: dns.LookupOptions, callback: (...args: any[]) => void): void {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error);
    const inside = addresses.find((a) => !isPublicAddress(a.address));
    if (inside) return callback(new OutboundRefused(`${hostname} resolves to ${inside.address}, which is not a public address`));
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

/** undici, the fetch and dispatcher outbound calls use, loaded with the first of them (decision 115). */
export const undici = requireOnFirstUse<typeof import("undici")>("undici");

/**
 * The dispatcher (undici, which global fetch and the API clients take as `dispatcher`/`agent`) for
 * calls to the URL a person entered at `origin`: it opens connections only to that origin's host
 * and port, a redirect elsewhere fails, and only to public addresses unless the operator allowed
 * the host. Close it when done.
 */
export function outboundAgent(config: Pick<Config, "outboundAllowHosts">, origin: string): Agent {
  const home = new URL(origin);
  const { Agent, buildConnector } = undici();
  const connect = buildConnector({});
  const connectPublic = buildConnector({ lookup: publicLookup } as buildConnector.BuildOptions);
  return new Agent({
    connect(options, callback) {
      const host = net.isIP(options.hostname) === 6 ? `[${options.hostname}]` : options.hostname;
      const url = new URL(`${options.protocol}//${host}${options.port ? `:${options.port}` : ""}`);
      const port = (u: URL) => u.port || defaultPort(u.protocol);
      const refused = (reason: string) => callback(new OutboundRefused(reason), null);
      if (url.hostname !== home.hostname || port(url) !== port(home)) return refused(`a redirect to ${url.host} left ${home.host}`);
      const reason = refusalOf(config, url);
      if (reason) return refused(reason);
      if (allowed(config, url.hostname, url.port, url.protocol)) return connect(options, callback);
      return connectPublic(options, callback);
    },
  });
}

/**
 * The same guard for clients built on Node's http (axios in jira.js): agents whose lookup refuses
 * any non-public address of the name at every connection, unless the operator allowed the host.
 * They cannot see a redirect's target, so the client must not follow redirects (axios
 * `maxRedirects: 0`). Throws OutboundRefused for a URL no lookup could make acceptable.
 */
export function outboundNodeAgents(config: Pick<Config, "outboundAllowHosts">, origin: string): { httpAgent: http.Agent; httpsAgent: https.Agent } {
  const home = new URL(origin);
  const reason = refusalOf(config, home);
  if (reason) throw new OutboundRefused(reason);
  const lookup = allowed(config, home.hostname, home.port, home.protocol) ? undefined : (publicLookup as unknown as net.LookupFunction);
  return { httpAgent: new http.Agent({ lookup }), httpsAgent: new https.Agent({ lookup }) };
}

/** The guard's refusal behind a failed call (fetch wraps it as the cause), or null. */
export function outboundRefusalOf(error: unknown): OutboundRefused | null {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof OutboundRefused) return e;
  }
  return null;
}
