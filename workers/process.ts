import { DataDirHeldError } from "../db/data-dir.ts";
import { loadConfig } from "../server/config/index.ts";
import { boot } from "../server/boot.ts";
import { describeFatal } from "../server/fatal.ts";
import { createLogger } from "../server/log.ts";
import { registerDatabaseGauges } from "../server/metrics/index.ts";
import { readinessOf } from "../server/http/health.ts";
import { startMetricsServer } from "../server/http/metrics.ts";
import type { JobCatalog } from "./catalog.ts";
import { startWorkers } from "./index.ts";

/**
 * A worker process (`npm run workers`): runs jobs until SIGINT/SIGTERM, then stops taking work,
 * lets in-flight jobs finish (or hands them back) and closes the database. Any number of these
 * can run against one PostgreSQL and Redis. In the embedded mode it can drain a data directory
 * while the server is stopped (the data-directory lock keeps it from running beside the server).
 */
export async function runWorkerProcess(options: { catalog?: JobCatalog } = {}): Promise<void> {
  try {
    const config = loadConfig();
    const log = createLogger(config.LOG_LEVEL).child({ process: "workers" });
    if (!config.REDIS_URL) log.warn("REDIS_URL is not set: running jobs from the database without BullMQ");
    const booted = await boot(config, { warn: (m) => log.warn(m), poolSize: config.JOB_CONCURRENCY + 4 }).catch((error: unknown) => {
      if (error instanceof DataDirHeldError) {
        throw new Error(`${error.message}. In the embedded mode the server runs the jobs itself; set DATABASE_URL to run separate workers`);
      }
      throw error;
    });
    const runner = await startWorkers({ services: booted.services, database: booted.database, log, catalog: options.catalog });
    // Job and sweep counts live in this process: METRICS_PORT serves them on 127.0.0.1 here too.
    registerDatabaseGauges(booted.database);
    const readiness = readinessOf(booted.services.db, config.mode, () => runner.kind, log);
    const metricsServer = config.METRICS_PORT ? await startMetricsServer(config.METRICS_PORT, readiness, log) : null;
    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, "workers shutting down: finishing in-flight jobs");
      await runner.stop();
      metricsServer?.close();
      await booted.close();
      process.exit(0);
    };
    // A failed job or a lost connection must never take the process down (main.ts does the same).
    process.on("unhandledRejection", (reason) => log.error({ err: reason }, "unhandled rejection"));
    process.on("SIGINT", () => void shutdown("SIGINT"));
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
  } catch (error) {
    process.stderr.write(`✗ retasc workers could not start: ${describeFatal(error)}\n`);
    process.exit(1);
  }
}
