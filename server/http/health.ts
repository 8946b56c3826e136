import { sql } from "drizzle-orm";
import { migrationStatus, query, type Db } from "../../db/client.ts";
import type { Config } from "../config/index.ts";
import type { Logger } from "../log.ts";
import { jobHealth } from "../outbox/index.ts";

/**
 * Readiness: the database answers, every migration is applied, and how the jobs are doing
 * (pending and failed outbox rows, the oldest one waiting, failed sweeps). For operators only:
 * /healthz shows it with the metrics token, strangers get liveness alone.
 */
export type Readiness = () => Promise<{ ok: boolean; detail: Record<string, unknown> }>;

export function readinessOf(db: Db, mode: Config["mode"], runner: () => string, log: Logger): Readiness {
  return async () => {
    try {
      const migrations = await migrationStatus(db);
      const [lag] = await query<{ oldest: number | null }>(
        db,
        sql`select extract(epoch from now() - min(created_at))::float8 as oldest from outbox
            where completed_at is null and failed_at is null`,
      );
      const jobs = { runner: runner(), ...(await jobHealth(db)), oldestPendingSeconds: Math.max(0, Math.round(Number(lag?.oldest ?? 0))) };
      return { ok: migrations.applied >= migrations.expected, detail: { mode, database: "ok", migrations, jobs } };
    } catch (error) {
      log.error({ err: error }, "health check failed");
      return { ok: false, detail: { mode, database: "unreachable" } };
    }
  };
}

/** `/healthz`: `{ok:true}` while the process serves; with the metrics token (or on METRICS_PORT), the readiness detail. */
export async function healthBody(readiness: Readiness, detailed: boolean): Promise<{ status: number; body: Record<string, unknown> }> {
  if (!detailed) return { status: 200, body: { ok: true } };
  const { ok, detail } = await readiness();
  return { status: ok ? 200 : 503, body: { ok, status: ok ? "ok" : "unavailable", ...detail } };
}
