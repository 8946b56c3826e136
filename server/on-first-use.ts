import { createRequire } from "node:module";

/**
 * A package loaded on its first use rather than when the process starts (decision 115). The
 * clients of outside services each load hundreds of files: loaded at boot, they made a third
 * of the app's start, for integrations most deployments never configure.
 */
export interface OnFirstUse<T> {
  /** The package, loaded once (later calls share the first load). */
  load(): Promise<T>;
  /**
   * The package if something has loaded it, else undefined. An error of one of its classes can
   * only exist once it is loaded, so a check of such an error needs no load of its own.
   */
  readonly loaded: T | undefined;
}

export function onFirstUse<T>(importPackage: () => Promise<T>): OnFirstUse<T> {
  let loaded: T | undefined;
  let loading: Promise<T> | undefined;
  return {
    load: () =>
      (loading ??= importPackage().then(
        (module) => (loaded = module),
        (error: unknown) => {
          // A failed load (a missing package) is tried again by the next use, not remembered.
          loading = undefined;
          throw error;
        },
      )),
    get loaded() {
      return loaded;
    },
  };
}

/**
 * One client per configuration, made on its first use (which loads its package): concurrent first
 * uses share one make, and a make that fails (not configured, a failed load) is tried again by the
 * next use rather than remembered.
 */
export function clientPerConfig<K extends object, T>(make: (key: K) => Promise<T>): (key: K) => Promise<T> {
  const made = new WeakMap<K, Promise<T>>();
  return (key) => {
    let client = made.get(key);
    if (!client) {
      client = make(key);
      made.set(key, client);
      client.catch(() => made.delete(key));
    }
    return client;
  };
}

/**
 * A CommonJS package required on its first use, synchronously: for a client that code builds in
 * a synchronous function (undici's dispatcher, ioredis's connection). Same rule as onFirstUse.
 */
export function requireOnFirstUse<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= createRequire(import.meta.url)(name) as T);
}
