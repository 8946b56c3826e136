import type { Job } from "bullmq";
import { metrics } from "../server/metrics/index.ts";
import { markOutboxCompleted, markOutboxFailed, outboxRowState } from "../server/outbox/index.ts";
import { errorLabel, executeJob } from "./catalog.ts";
import { isPermanent, PermanentJobError } from "./job.ts";
import { startOutboxRelay, type OutboxJobData } from "./relay.ts";
import { SHUTDOWN_GRACE_MS, settleWithin, type JobRunner, type RunnerOptions } from "./runner.ts";
import { runSweepTick, type SweepDefinition } from "./sweeps.ts";

/** How long a frozen org's relayed job waits before it looks again (a freeze lasts seconds). */
const FROZEN_JOB_DELAY_MS = 5_000;

export const QUEUE_NAME = "jobs";

/** Reconnect quickly after an outage (BullMQ's default backs off to 20 s). */
const retryStrategy = (times: number) => Math.min(200 * times, 2_000);

/** The tick a scheduler job stands for: its id is `repeat:<scheduler>:<millis>`. */
function tickOf(job: Job): number {
  const fromId = Number(String(job.id).split(":").pop());
  return Number.isFinite(fromId) && fromId > 0 ? fromId : job.timestamp;
}

/**
 * Outbox jobs and sweeps on BullMQ. Sweeps are job schedulers: Redis creates one job per tick,
 * so one worker runs it however many processes there are (and the tick receipt guards a
 * redelivered one). Outbox jobs retry with exponential backoff; permanent failures become
 * `UnrecoverableError`; failed jobs are kept in Redis and marked on their outbox row.
 */
export async function startBullmqRunner(options: RunnerOptions & { redisUrl: string }): Promise<JobRunner> {
  // Loaded here, not at the top: a process without Redis runs the inline runner and never needs it.
  const { DelayedError, Queue, UnrecoverableError, Worker } = await import("bullmq");
  const { services, database, log, catalog, sweeps, redisUrl } = options;
  const { config, db } = services;
  const prefix = config.BULLMQ_PREFIX;
  const sweepsByName = new Map<string, SweepDefinition>(sweeps.map((s) => [s.name, s]));

  // Fail fast while Redis is away instead of queueing commands in memory: the outbox holds the work.
  const queue = new Queue(QUEUE_NAME, {
    prefix,
    connection: { url: redisUrl, enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 5_000, retryStrategy },
  });
  let redisDown = false;
  const onRedisError = (error: Error) => {
    if (!redisDown) log.warn({ err: error }, "Redis unreachable; jobs wait in the outbox");
    redisDown = true;
  };
  queue.on("error", onRedisError);

  const worker = new Worker(
    QUEUE_NAME,
    async (job: Job, token?: string) => {
      redisDown = false;
      const sweep = sweepsByName.get(job.name);
      if (sweep) return runSweepTick(services, log, sweep, tickOf(job));
      const { outboxId, payload } = job.data as OutboxJobData;
      // Called off since it was relayed (its org deleted): nothing of it runs. Its org frozen for a
      // move (decision 110): it waits, delayed without spending an attempt, writing nothing meanwhile.
      const state = await outboxRowState(db, outboxId);
      if (state === "canceled") return null;
      if (state === "frozen") {
        await job.moveToDelayed(Date.now() + FROZEN_JOB_DELAY_MS, token);
        throw new DelayedError();
      }
      const attempt = Math.max(1, job.attemptsStarted ?? job.attemptsMade + 1);
      log.debug({ job: job.name, outboxId, attempt }, "job started");
      try {
        const result = await executeJob(catalog, { services, log, key: `outbox:${outboxId}`, outboxId, attempt }, job.name, payload);
        await markOutboxCompleted(db, outboxId);
        return result ?? null;
      } catch (error) {
        // Our own permanent failures say what is wrong (an unknown job, a refused token) and carry no
        // data; any other keeps only its label, as on the outbox row.
        if (isPermanent(error)) throw new UnrecoverableError(error instanceof PermanentJobError ? error.message : errorLabel(error));
        throw error;
      }
    },
    {
      prefix,
      connection: { url: redisUrl, retryStrategy },
      concurrency: config.JOB_CONCURRENCY,
      lockDuration: config.JOB_LOCK_MS,
      stalledInterval: config.JOB_LOCK_MS,
      // A job whose worker died is run again once more; a job that kills every worker fails.
      maxStalledCount: 2,
    },
  );
  worker.on("error", onRedisError);
  worker.on("completed", (job) => {
    if (!sweepsByName.has(job.name)) metrics.job(job.name, "completed");
  });
  worker.on("failed", (job, error) => {
    if (!job) return;
    const outboxId = (job.data as Partial<OutboxJobData>).outboxId;
    const final = Boolean(job.finishedOn);
    if (!sweepsByName.has(job.name)) metrics.job(job.name, final ? "failed" : "retry");
    log[final ? "error" : "warn"]({ err: error, job: job.name, jobId: job.id, attempts: job.attemptsMade, final }, final ? "job failed for good" : "job failed; will retry");
    if (final && typeof outboxId === "number") {
      markOutboxFailed(db, outboxId, errorLabel(error)).catch((e: unknown) => log.warn({ err: e }, "could not mark an outbox row failed"));
    }
  });

  const relay = await startOutboxRelay({
    db,
    database,
    config,
    log,
    queue,
    jobOptions: {
      attempts: config.JOB_ATTEMPTS,
      backoff: { type: "exponential", delay: config.JOB_BACKOFF_MS },
      removeOnComplete: { age: 86_400, count: 10_000 },
      removeOnFail: false,
    },
  });

  // Upsert on start (so a changed interval applies), then re-create any scheduler Redis lost.
  const ensureSchedulers = async (always: boolean) => {
    for (const sweep of sweeps) {
      const existing = always ? undefined : await queue.getJobScheduler(sweep.name);
      if (existing && Number(existing.every) === sweep.everyMs) continue;
      await queue.upsertJobScheduler(
        sweep.name,
        { every: sweep.everyMs },
        { name: sweep.name, data: {}, opts: { attempts: 1, removeOnComplete: { count: 100 }, removeOnFail: { count: 1_000 } } },
      );
    }
  };
  let schedulersReady = false;
  const checkSchedulers = () => {
    ensureSchedulers(!schedulersReady)
      .then(() => {
        schedulersReady = true;
      })
      .catch(() => {}); // Redis away: the relay already says so; try again on the next poll
  };
  checkSchedulers();
  const schedulerPoll = setInterval(checkSchedulers, Math.max(config.OUTBOX_POLL_MS, 1_000));
  log.info({ prefix, sweeps: sweeps.map((s) => s.name) }, "BullMQ job runner started");

  return {
    kind: "bullmq",
    async stop() {
      clearInterval(schedulerPoll);
      await relay.stop();
      // Let active jobs finish; past the grace period close hard and let the lock expire, so
      // another worker takes them over.
      const closing = worker.close();
      if (!(await settleWithin([closing], SHUTDOWN_GRACE_MS))) await worker.close(true).catch(() => {});
      await settleWithin([queue.close()], SHUTDOWN_GRACE_MS);
      log.info("BullMQ job runner stopped");
    },
  };
}
