import type { Database } from "../db/client.ts";
import type { Services } from "../server/context.ts";
import type { Logger } from "../server/log.ts";
import { startBullmqRunner } from "./bullmq.ts";
import { retascJobs, type JobCatalog } from "./catalog.ts";
import { startInlineRunner } from "./inline.ts";
import type { JobRunner } from "./runner.ts";
import { retascSweeps, type SweepDefinition } from "./sweeps.ts";

export type { JobRunner } from "./runner.ts";

/**
 * Starts the job runner this deployment uses: BullMQ when a PostgreSQL server and REDIS_URL
 * are configured, otherwise the in-process runner on the database (always in the embedded
 * mode). Both run the same handlers and sweeps.
 */
export function startWorkers(options: {
  services: Services;
  database: Database;
  log: Logger;
  catalog?: JobCatalog;
  sweeps?: SweepDefinition[];
}): Promise<JobRunner> {
  const { services } = options;
  const base = {
    ...options,
    catalog: options.catalog ?? retascJobs,
    sweeps: options.sweeps ?? retascSweeps(services.config),
  };
  const { REDIS_URL, mode } = services.config;
  if (mode === "server" && REDIS_URL) return startBullmqRunner({ ...base, redisUrl: REDIS_URL });
  return startInlineRunner({ ...base, exclusive: mode === "embedded" });
}

/** Whether the web process runs the jobs itself: always in the embedded mode unless told `off`. */
export function runsInlineWorkers(config: Services["config"]): boolean {
  return config.RETASC_WORKERS === "inline" || (config.mode === "embedded" && config.RETASC_WORKERS !== "off");
}
