import http from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Config } from "../config/index.ts";
import type { Logger } from "../log.ts";
import { healthBody, type Readiness } from "./health.ts";
import { hasMetricsToken, renderMetrics } from "../metrics/index.ts";
import { refuse } from "./refuse.ts";

/**
 * `/metrics` on the app's port: 404 when METRICS_TOKEN is unset (the route does not exist for
 * anyone), 401 without the token or with another, the exposition with it.
 */
export async function answerMetrics(req: IncomingMessage, res: ServerResponse, config: Config): Promise<void> {
  if (!config.METRICS_TOKEN) {
    return refuse(res, false, 404, "NOT_FOUND", "There is no such page.", "Metrics are served when METRICS_TOKEN or METRICS_PORT is set.");
  }
  if (!hasMetricsToken(config, req.headers.authorization)) {
    return refuse(res, false, 401, "UNAUTHORIZED", "Metrics need the metrics token.", "Send Authorization: Bearer <METRICS_TOKEN>.", {
      "www-authenticate": 'Bearer realm="retasc-metrics"',
    });
  }
  await writeMetrics(res);
}

async function writeMetrics(res: ServerResponse): Promise<void> {
  const { contentType, body } = await renderMetrics();
  res.writeHead(200, { "content-type": contentType, "cache-control": "no-store" });
  res.end(body);
}

/**
 * METRICS_PORT: a listener on 127.0.0.1 only (a sidecar or a node agent scrapes it), answering
 * /metrics and /healthz's readiness detail without a token; anything else is a 404.
 */
export async function startMetricsServer(port: number, readiness: Readiness, log: Logger): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const answer = async () => {
      if (req.method !== "GET" && req.method !== "HEAD") return refuse(res, false, 405, "INVALID_INPUT", "Only GET is served here.", "Send GET.");
      if (path === "/metrics") return writeMetrics(res);
      if (path === "/healthz") {
        const { status, body } = await healthBody(readiness, true);
        res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
        return void res.end(JSON.stringify(body));
      }
      refuse(res, false, 404, "NOT_FOUND", "There is no such page.", "This port serves /metrics and /healthz.");
    };
    answer().catch((err: unknown) => {
      log.error({ err }, "metrics request failed");
      if (!res.headersSent) refuse(res, false, 500, "UNAVAILABLE", "The metrics could not be read.", "Retry shortly; the error has been logged.");
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  log.info({ port }, "metrics listening on 127.0.0.1");
  return server;
}
