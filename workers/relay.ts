import type { Queue } from "bullmq";
import { sql } from "drizzle-orm";
import { query, type Database, type Db } from "../db/client.ts";
import type { Config } from "../server/config/index.ts";
import type { Logger } from "../server/log.ts";
import { markOutboxCompleted, markOutboxFailed, OUTBOX_CHANNEL, outboxRowRunnable } from "../server/outbox/index.ts";
import { withTimeout } from "./runner.ts";

const BATCH = 200;
const REDIS_TIMEOUT_MS = 5_000;

interface OutboxRow {
  id: number;
  job: string;
  payload: unknown;
}

/** The data of a BullMQ job made from an outbox row: ids only, like the row. */
export interface OutboxJobData {
  outboxId: number;
  payload: unknown;
}

/** One BullMQ job id per outbox row, so handing a row over twice adds nothing. */
export const outboxJobId = (id: number) => `outbox-${id}`;

const idList = (rows: OutboxRow[]) => sql.join(rows.map((r) => sql`${Number(r.id)}`), sql`, `);

/**
 * Moves committed outbox rows into BullMQ. Rows are locked (skip locked: several relays share
 * the work), added under their outbox id, and only then marked relayed in the same transaction:
 * if Redis is down the transaction rolls back and the rows wait; if the process dies after the
 * add, the rows are added again and BullMQ keeps the one job. Rows relayed long ago and still
 * not completed are checked against Redis and added again if Redis lost them (a restart without
 * persistence). Woken by NOTIFY on commit, and by a poll as a fallback.
 */
export async function startOutboxRelay(options: {
  db: Db;
  database: Database;
  config: Config;
  log: Logger;
  queue: Queue;
  jobOptions: Record<string, unknown>;
}): Promise<{ stop(): Promise<void> }> {
  const { db, database, config, log, queue, jobOptions } = options;
  let stopping = false;
  let running: Promise<void> | null = null;
  let runAgain = false;
  let outage = false;

  const add = (rows: OutboxRow[]) =>
    withTimeout(
      queue.addBulk(
        rows.map((row) => ({
          name: row.job,
          data: { outboxId: Number(row.id), payload: row.payload } satisfies OutboxJobData,
          opts: { ...jobOptions, jobId: outboxJobId(Number(row.id)) },
        })),
      ),
      REDIS_TIMEOUT_MS,
      "adding jobs to Redis",
    );

  /** Hands over up to one batch of new rows; returns how many. */
  const relayNew = () =>
    db.transaction(async (tx) => {
      const rows = await query<OutboxRow>(
        tx,
        sql`select id, job, payload from outbox
            where relayed_at is null and completed_at is null and failed_at is null and ${outboxRowRunnable}
            order by id limit ${BATCH} for update skip locked`,
      );
      if (rows.length === 0) return 0;
      await add(rows);
      await tx.execute(sql`update outbox set relayed_at = now() where id in (${idList(rows)})`);
      return rows.length;
    });

  /** Rows relayed long ago but not finished: settle them from Redis's view, or add them again. */
  const reconcileStale = () =>
    db.transaction(async (tx) => {
      const rows = await query<OutboxRow>(
        tx,
        sql`select id, job, payload from outbox
            where relayed_at < now() - ${config.OUTBOX_REDELIVER_MS} * interval '1 millisecond'
              and completed_at is null and failed_at is null
            order by id limit ${BATCH} for update skip locked`,
      );
      const lost: OutboxRow[] = [];
      for (const row of rows) {
        const job = await withTimeout(queue.getJob(outboxJobId(Number(row.id))), REDIS_TIMEOUT_MS, "reading a job");
        if (!job) {
          lost.push(row);
          continue;
        }
        const state = await withTimeout(job.getState(), REDIS_TIMEOUT_MS, "reading a job state");
        // Outcomes the worker could not write back (it died, or BullMQ failed a job that stalled too often).
        if (state === "completed") await markOutboxCompleted(tx, Number(row.id));
        if (state === "failed") await markOutboxFailed(tx, Number(row.id), "failed in queue");
      }
      if (lost.length > 0) {
        await add(lost);
        log.warn({ count: lost.length }, "outbox rows missing from Redis were handed over again");
      }
      if (rows.length > 0) await tx.execute(sql`update outbox set relayed_at = now() where id in (${idList(rows)})`);
    });

  async function pass(): Promise<void> {
    try {
      let moved = 0;
      for (let n = BATCH; n === BATCH && !stopping; ) {
        n = await relayNew();
        moved += n;
      }
      if (!stopping) await reconcileStale();
      if (outage) log.info({ moved }, "outbox relay reached Redis again");
      outage = false;
    } catch (error) {
      if (!outage) log.warn({ err: error }, "outbox relay cannot hand rows to Redis; they stay in the outbox");
      outage = true;
    }
  }

  function wake(): void {
    if (stopping) return;
    if (running) {
      runAgain = true;
      return;
    }
    running = pass().finally(() => {
      running = null;
      if (runAgain) {
        runAgain = false;
        wake();
      }
    });
  }

  const poll = setInterval(wake, config.OUTBOX_POLL_MS);
  const unlisten = await database.listen(OUTBOX_CHANNEL, wake);
  wake();
  return {
    async stop() {
      stopping = true;
      clearInterval(poll);
      await unlisten().catch(() => {});
      await running;
    },
  };
}
