import path from "node:path";
import {
  migrateDatabase,
  openPglite,
  openPostgres,
  type Database,
} from "../db/client.ts";
import { lockDataDir } from "../db/data-dir.ts";
import type { Config } from "./config/index.ts";
import { systemClock, type Services } from "./context.ts";
import { Keyring, resolveMasterKey } from "./crypto/index.ts";
import { notifyPublisher } from "./events/index.ts";

export interface Booted {
  services: Services;
  database: Database;
  close(): Promise<void>;
}

/**
 * Opens the database for this mode (PGlite in the data dir, or PostgreSQL), applies
 * pending migrations and loads the master key. Shared by the server, the workers and
 * the operator commands so they all start the same way.
 */
export async function boot(
  config: Config,
  options: { warn?: (message: string) => void; poolSize?: number } = {},
): Promise<Booted> {
  const warn = options.warn ?? ((m: string) => console.warn(`! ${m}`));
  let database: Database;
  let unlock = () => {};
  let masterKey: Buffer;
  if (config.DATABASE_URL) {
    masterKey = resolveMasterKey(config.RETASC_MASTER_KEY, undefined, warn);
    database = await openPostgres(config.DATABASE_URL, { max: options.poolSize, directUrl: config.DATABASE_DIRECT_URL });
    // Under a session advisory lock, which a pooler in transaction mode cannot hold: on the direct URL.
    await migrateDatabase(database, config.DATABASE_DIRECT_URL ?? config.DATABASE_URL, {
      // A migration behind a long transaction gives way to the claims and tries again (decision 069).
      onRetry: (e) => warn(`migration ${e.tag} waits for a lock on its tables (try ${e.attempt} of ${e.attempts}); trying again in ${e.pauseMs} ms`),
    });
  } else {
    const dataDir = path.resolve(config.RETASC_DATA_DIR);
    unlock = lockDataDir(dataDir);
    try {
      masterKey = resolveMasterKey(config.RETASC_MASTER_KEY, dataDir, warn);
      database = await openPglite(path.join(dataDir, "pgdata"));
      await migrateDatabase(database);
    } catch (error) {
      unlock();
      throw error;
    }
  }
  const services: Services = {
    db: database.db,
    config,
    keyring: new Keyring(masterKey),
    clock: systemClock,
    events: notifyPublisher,
  };
  return {
    services,
    database,
    async close() {
      await database.close();
      unlock();
    },
  };
}
