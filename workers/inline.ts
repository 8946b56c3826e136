import { sql } from "drizzle-orm";
import { query } from "../db/client.ts";
import { metrics } from "../server/metrics/index.ts";
import { markOutboxCompleted, markOutboxFailed, OUTBOX_CHANNEL, outboxRowRunnable } from "../server/outbox/index.ts";
import { backoffMs, errorLabel, executeJob } from "./catalog.ts";
import { isPermanent } from "./job.ts";
import { nextTick, settleWithin, SHUTDOWN_GRACE_MS, type JobRunner, type RunnerOptions } from "./runner.ts";
import { runSweepTick } from "./sweeps.ts";

/** How long after a retry's timer the runner looks for the row again, in case the timer fired early. */
const RETRY_RECHECK_MS = 1_000;

interface ClaimedRow {
  id: number;
  job: string;
  payload: unknown;
  attempts: number;
}

/**
 * Runs outbox jobs straight from the database and sweeps on timers: the embedded mode, and a
 * server without Redis. Rows are claimed with a time lock (`locked_until`, renewed while the
 * job runs), so several runners on one PostgreSQL share the work and a crashed runner's rows
 * come back; sweep ticks are claimed by receipt, so each runs once however many runners.
 * `exclusive` (the embedded mode, where the data-dir lock proves no one else runs) frees the
 * rows a crashed predecessor held at once instead of waiting out their locks.
 */
export async function startInlineRunner(options: RunnerOptions & { exclusive: boolean }): Promise<JobRunner> {
  const { services, database, log, catalog, sweeps } = options;
  const { db, config } = services;
  const lockInterval = sql`${config.JOB_LOCK_MS} * interval '1 millisecond'`;
  const inFlight = new Map<number, Promise<void>>();
  const sweepRuns = new Set<Promise<void>>();
  const timers = new Set<NodeJS.Timeout>();
  let stopping = false;
  let draining: Promise<void> | null = null;
  let wakeAgain = false;

  if (options.exclusive) {
    await db.execute(sql`update outbox set locked_until = null
                         where locked_until is not null and completed_at is null and failed_at is null`);
  }

  const claim = (limit: number) =>
    query<ClaimedRow>(
      db,
      sql`update outbox set locked_until = now() + ${lockInterval}, attempts = attempts + 1
          where id in (
            select id from outbox
            where completed_at is null and failed_at is null and available_at <= now()
              and (locked_until is null or locked_until < now()) and ${outboxRowRunnable}
            order by id limit ${limit}
            for update skip locked)
          returning id, job, payload, attempts`,
    );

  async function run(row: ClaimedRow): Promise<void> {
    const id = Number(row.id);
    const attempt = Number(row.attempts);
    log.debug({ job: row.job, outboxId: id, attempt }, "job started");
    try {
      await executeJob(catalog, { services, log, key: `outbox:${id}`, outboxId: id, attempt }, row.job, row.payload);
      await markOutboxCompleted(db, id);
      metrics.job(row.job, "completed");
    } catch (error) {
      const label = errorLabel(error);
      if (isPermanent(error) || attempt >= config.JOB_ATTEMPTS) {
        metrics.job(row.job, "failed");
        log.error({ err: error, job: row.job, outboxId: id, attempt }, "job failed for good");
        await markOutboxFailed(db, id, label).catch(() => {});
        return;
      }
      metrics.job(row.job, "retry");
      const wait = backoffMs(config.JOB_BACKOFF_MS, attempt);
      log.warn({ err: error, job: row.job, outboxId: id, attempt, retryInMs: wait }, "job failed; will retry");
      await db
        .execute(sql`update outbox set locked_until = null, last_error = ${label},
                       available_at = now() + ${wait} * interval '1 millisecond'
                     where id = ${id}`)
        .catch(() => {});
      // A timer can fire a little early against the database's clock (Node counts from the event
      // loop's cached time), finding the row not yet available: look again a second later.
      later(wait, wake);
      later(wait + RETRY_RECHECK_MS, wake);
    }
  }

  async function drain(): Promise<void> {
    while (!stopping) {
      const room = config.JOB_CONCURRENCY - inFlight.size;
      if (room <= 0) return; // a finishing job wakes the runner again
      const rows = await claim(room);
      for (const row of rows) {
        const id = Number(row.id);
        inFlight.set(
          id,
          run(row).finally(() => {
            inFlight.delete(id);
            wake();
          }),
        );
      }
      if (rows.length < room) return;
    }
  }

  function wake(): void {
    if (stopping) return;
    if (draining) {
      wakeAgain = true;
      return;
    }
    draining = drain()
      .catch((error: unknown) => log.warn({ err: error }, "outbox poll failed; retrying on the next wake"))
      .finally(() => {
        draining = null;
        if (wakeAgain) {
          wakeAgain = false;
          wake();
        }
      });
  }

  function later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  }

  function scheduleSweep(sweep: (typeof sweeps)[number]): void {
    const tick = nextTick(Date.now(), sweep.everyMs);
    later(Math.max(0, tick - Date.now()), () => {
      if (stopping) return;
      const running = runSweepTick(services, log, sweep, tick)
        .then(() => undefined)
        .catch((error: unknown) => log.error({ err: error, sweep: sweep.name }, "sweep failed"))
        .finally(() => sweepRuns.delete(running));
      sweepRuns.add(running);
      scheduleSweep(sweep);
    });
  }

  // Long jobs keep their rows; another runner takes a row only after its holder stopped renewing.
  const renew = setInterval(() => {
    if (inFlight.size === 0) return;
    const ids = [...inFlight.keys()];
    db.execute(
      sql`update outbox set locked_until = now() + ${lockInterval}
          where id in (${sql.join(ids.map((i) => sql`${i}`), sql`, `)}) and completed_at is null and failed_at is null`,
    ).catch((error: unknown) => log.warn({ err: error }, "could not renew job locks"));
  }, Math.max(50, Math.floor(config.JOB_LOCK_MS / 2)));
  const poll = setInterval(wake, config.OUTBOX_POLL_MS);
  const unlisten = await database.listen(OUTBOX_CHANNEL, wake);
  for (const sweep of sweeps) scheduleSweep(sweep);
  wake();
  log.info({ sweeps: sweeps.map((s) => s.name) }, "in-process job runner started");

  return {
    kind: "inline",
    async stop() {
      stopping = true;
      clearInterval(poll);
      for (const timer of timers) clearTimeout(timer);
      await unlisten().catch(() => {});
      const finished = await settleWithin([draining, ...inFlight.values(), ...sweepRuns], SHUTDOWN_GRACE_MS);
      clearInterval(renew);
      if (!finished && inFlight.size > 0) {
        // Hand unfinished rows back; their receipts keep a rerun from doubling any effect.
        const ids = [...inFlight.keys()];
        await db
          .execute(sql`update outbox set locked_until = null where id in (${sql.join(ids.map((i) => sql`${i}`), sql`, `)})`)
          .catch(() => {});
      }
      log.info({ finished }, "in-process job runner stopped");
    },
  };
}
