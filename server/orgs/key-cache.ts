import type { Principal } from "../context.ts";

/**
 * How long a process trusts a key's principal without reading its row again. A key revoked,
 * expired or suspended on another instance (or by the admin CLI) stops working here within this
 * long; a key or membership changed through this process forgets every cached key at once
 * (decision 078).
 */
export const KEY_CACHE_MS = 1_000;
/** Entries kept at most; past it the oldest go first (a Map keeps insertion order). */
const KEY_CACHE_ENTRIES = 10_000;

// On globalThis: the app's bundle (whose routes change keys) and main.ts (whose /mcp reads them)
// each hold a copy of this module, and both must see one cache.
const cached = ((globalThis as Record<symbol, unknown>)[Symbol.for("retasc.keyCache")] ??= new Map()) as Map<string, { principal: Principal; until: number }>;

/** The principal cached for a key's hash, while it is fresh. */
export function cachedPrincipal(keyHash: string, nowMs: number): Principal | null {
  const hit = cached.get(keyHash);
  return hit && hit.until > nowMs ? hit.principal : null;
}

/** Keeps a principal just read for KEY_CACHE_MS. */
export function keepPrincipal(keyHash: string, principal: Principal, nowMs: number): void {
  cached.delete(keyHash);
  if (cached.size >= KEY_CACHE_ENTRIES) cached.delete(cached.keys().next().value!);
  cached.set(keyHash, { principal, until: nowMs + KEY_CACHE_MS });
}

/** Forgets every cached key: a key or membership changed through this process. */
export function forgetCachedKeys(): void {
  cached.clear();
}
