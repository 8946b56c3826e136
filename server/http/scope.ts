import { AsyncLocalStorage } from "node:async_hooks";

/**
 * What the edge learnt about a request that React Router's Fetch Request cannot carry: the CSP
 * nonce its page's scripts must bear (app/entry.server.tsx) and the client's address as the
 * rate limits count it (TRUST_PROXY_HOPS applied). Only page requests run in a scope; /mcp
 * never pays for one.
 */
export interface RequestScope {
  readonly nonce: string;
  readonly address: string;
}

// One store per process: the app's build bundles its own copy of this module beside main.ts's.
const storage: AsyncLocalStorage<RequestScope> = ((globalThis as Record<symbol, unknown>)[Symbol.for("retasc.requestScope")] ??=
  new AsyncLocalStorage<RequestScope>()) as AsyncLocalStorage<RequestScope>;

export function runInScope<T>(scope: RequestScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** The scope of the request being handled, or null outside the edge (tests, the dev server). */
export function requestScope(): RequestScope | null {
  return storage.getStore() ?? null;
}
