import type { Route } from "./+types/healthz";

/** Liveness and readiness: the database answers and every migration is applied. */
export async function loader({ context }: Route.LoaderArgs) {
  const { ok, detail } = await context.health();
  return Response.json({ status: ok ? "ok" : "unavailable", ...detail }, { status: ok ? 200 : 503 });
}
