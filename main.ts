/**
 * The process entry: validate config → open the database (migrating it) → serve the
 * React Router app over HTTP → shut down gracefully on SIGINT/SIGTERM.
 */
import "./server/config/node-env.ts";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { ServerBuild } from "react-router";
import { loadConfig } from "./server/config/index.ts";
import { boot } from "./server/boot.ts";
import { describeFatal } from "./server/fatal.ts";
import { createLogger } from "./server/log.ts";
import { EventHub } from "./server/events/index.ts";
import { createStaticHandler } from "./app/static.server.ts";
import type { RetascLoadContext } from "./app/context.server.ts";
import { registerDatabaseGauges } from "./server/metrics/index.ts";
import { readinessOf } from "./server/http/health.ts";
import { startMetricsServer } from "./server/http/metrics.ts";
import { createRequestGuard } from "./server/http/limits.ts";
import { createEdge } from "./server/http/edge.ts";
import { createHeavyReads } from "./server/http/heavy-reads.ts";
import { refuse } from "./server/http/refuse.ts";
import { handleMcpNodeRequest } from "./server/mcp/http.ts";
import { runsInlineWorkers, startWorkers, type JobRunner } from "./workers/index.ts";

async function main() {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL);
  const booted = await boot(config, { warn: (m) => log.warn(m) });
  const { services } = booted;

  // Imported only now: it loads React, which must see NODE_ENV, or the server renders with React's
  // development build against react-dom's production one and every page fails.
  const { createRequestListener } = await import("@react-router/node");
  const buildPath = path.resolve(config.RETASC_BUILD_DIR, "server/index.js");
  const build = (await import(pathToFileURL(buildPath).href)) as ServerBuild;

  let workers: JobRunner | null = null;
  const health = readinessOf(services.db, config.mode, () => workers?.kind ?? "separate", log);
  registerDatabaseGauges(booted.database);
  const metricsServer = config.METRICS_PORT ? await startMetricsServer(config.METRICS_PORT, health, log) : null;

  const hub = new EventHub();
  await hub.start(booted.database);
  if (runsInlineWorkers(config)) workers = await startWorkers({ services, database: booted.database, log });
  else log.info("background jobs run in separate processes: npm run workers");
  const context: RetascLoadContext = { services, hub, log, health };
  const handle = createRequestListener({ build, mode: "production", getLoadContext: () => context as never });
  const serveStatic = createStaticHandler(path.join(config.RETASC_BUILD_DIR, "client"));

  const guard = createRequestGuard(config, log);
  const heavyReads = createHeavyReads(config);
  const server = http.createServer(
    {
      requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
      headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
      // How often those timeouts are checked (Node's default, 30 s, would let slow clients linger).
      connectionsCheckingInterval: Math.min(1_000, config.HTTP_HEADERS_TIMEOUT_MS),
    },
    createEdge(config, log, guard, {
      serveStatic,
      // The agents' endpoint is answered here, not by React Router: it is the hot path and needs none of it.
      mcp: (req, res, admission) => handleMcpNodeRequest(req, res, { services, log, heavyReads }, admission),
      app: async (req, res, path) => {
        // A data request for the Dash's endless event stream: the router would wait for it to end.
        if (path === "/dash/events.data") refuse(res, false, 404, "NOT_FOUND", "no such data route", "The Dash's live events are at /dash/events.");
        else await handle(req, res);
      },
    }, heavyReads),
  );
  // Longer than the idle timeouts of load balancers (60 s is common) and clients, so the server is
  // never the side that closes an idle connection just as a request is sent on it (ECONNRESET).
  server.keepAliveTimeout = 65_000;
  server.listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.PORT;
  const url = config.PUBLIC_URL ?? `http://localhost:${port}`;
  log.info({ port, mode: config.mode }, "retasc listening");
  if (!config.PUBLIC_URL && config.mode === "server") {
    log.warn("PUBLIC_URL is unset: only requests addressed to localhost, 127.0.0.1 or [::1] are answered (421 otherwise)");
  }
  if (config.mode === "embedded") {
    process.stderr.write(
      `\nRetasc is running at ${url} (embedded mode, data in ${path.resolve(config.RETASC_DATA_DIR)})\n` +
        `Next: open ${url} and create your account (${url}/auth/sign-up); the Dash then asks for an org\n` +
        `and a first project, and its Fleet page shows how to connect an agent. With the CLI, installed once from this clone\n` +
        `  (cd cli && npm pack && npm install -g ./retasc-cli-*.tgz)\n` +
        `run in your agent's folder\n` +
        `  retasc login --url ${url} && retasc bind\n` +
        `or point an MCP client at ${url}/mcp with "Authorization: Bearer <key>" (a key from the Dash's Keys page).\n\n`,
    );
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down: finishing in-flight requests");
    await hub.close(); // ends live streams, which would otherwise hold the server open
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), 10_000);
    await closed;
    clearTimeout(force);
    await workers?.stop();
    metricsServer?.close();
    await guard.close();
    await booted.close();
    log.info("stopped");
    process.exit(0);
  };
  // One failed request must never take the whole server down with it.
  process.on("unhandledRejection", (reason) => log.error({ err: reason }, "unhandled rejection"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

main().catch((error: unknown) => {
  process.stderr.write(`✗ retasc could not start: ${describeFatal(error)}\n`);
  process.exit(1);
});
