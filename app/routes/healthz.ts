import { hasMetricsToken } from "../../server/metrics/index.ts";
import { healthBody } from "../../server/http/health.ts";
import type { Route } from "./+types/healthz";

/**
 * Liveness for anyone (`{ok:true}` while the process serves); readiness (database, migrations,
 * jobs and the outbox's lag, 503 when not ready) only with the metrics token: it tells a
 * stranger more than they need.
 */
export async function loader({ request, context }: Route.LoaderArgs) {
  const detailed = hasMetricsToken(context.services.config, request.headers.get("authorization"));
  const { status, body } = await healthBody(context.health, detailed);
  return Response.json(body, { status, headers: { "cache-control": "no-store" } });
}
