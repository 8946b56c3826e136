import { sql } from "drizzle-orm";
import type { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import { outbox } from "../../db/schema/index.ts";
import { jobSchemas, type JobSchemas } from "./jobs.ts";
import { invalidInput } from "../errors.ts";
import { noticeAfterCommit, noticesAfterCommitOf } from "../events/index.ts";

/** NOTIFY channel that wakes the outbox relay (or the in-process runner) on commit. */
export const OUTBOX_CHANNEL = "retasc_outbox";

export type Enqueue<S extends JobSchemas> = <J extends keyof S & string>(
  tx: Db,
  job: J,
  payload: z.input<S[J]>,
) => Promise<number>;

/** An `enqueue` bound to a job map; the app uses `enqueue` below, tests bind their own probe jobs. */
export function createEnqueue<S extends JobSchemas>(schemas: S): Enqueue<S> {
  return async (tx, job, payload) => {
    const schema = schemas[job];
    if (!schema) throw invalidInput(`unknown job ${job}`, `Use one of: ${Object.keys(schemas).join(", ")}.`);
    const parsed = schema.safeParse(payload);
    if (!parsed.success) {
      throw invalidInput(
        `invalid payload for job ${job}: ${parsed.error.issues.map((i) => `${i.path.join(".") || "payload"} ${i.message}`).join("; ")}`,
        "Job payloads carry ids and kinds only, never content.",
      );
    }
    const data = parsed.data as Record<string, unknown>;
    const orgId = typeof data.orgId === "string" ? data.orgId : null;
    const [row] = await tx.insert(outbox).values({ job, payload: data, orgId }).returning({ id: outbox.id });
    // The relay's wake-up goes out once the row is committed (one per transaction); a
    // transaction not opened with transactionWithNotices is refused, as a publish in it is.
    const queued = noticesAfterCommitOf(tx);
    if (!queued?.some((notice) => notice.channel === OUTBOX_CHANNEL)) noticeAfterCommit(tx, [{ channel: OUTBOX_CHANNEL, payload: "" }]);
    return row!.id;
  };
}

/**
 * Records a side effect to run after this transaction commits: call it with the transaction
 * of the change that causes it, so a crash can neither lose it nor run it for a rolled-back change.
 */
export const enqueue = createEnqueue(jobSchemas);

export async function markOutboxCompleted(db: Db, id: number): Promise<void> {
  await db.execute(
    sql`update outbox set completed_at = now(), locked_until = null, last_error = null where id = ${id} and completed_at is null`,
  );
}

/**
 * SQL true for an outbox row a runner may take now: not of an org frozen for a move (decision 110),
 * whose rows must not change until the move is over; its jobs wait, and run on the stack it moved to.
 * The org's purge alone runs frozen: it deletes the source's copy after the move, frozen for good.
 * It spells out orgs/freeze.ts's orgNotFrozen, since server/orgs imports the outbox.
 */
export const outboxRowRunnable = sql`(outbox.org_id is null or outbox.job = 'org.purge'
  or not exists (select 1 from orgs f where f.id = outbox.org_id and f.frozen_at is not null))`;

/**
 * Whether a relayed job runs, in one statement: its row called off (marked failed, as an org's
 * deletion marks its jobs, or removed with a deleted org's rows), its org frozen (it waits), or
 * open. BullMQ holds copies of rows, so its worker asks before each run.
 */
export async function outboxRowState(db: Db, id: number): Promise<"canceled" | "frozen" | "open"> {
  const [row] = await query<{ runnable: boolean }>(db, sql`select ${outboxRowRunnable} as runnable from outbox where id = ${id} and failed_at is null`);
  if (!row) return "canceled";
  return row.runnable ? "open" : "frozen";
}

export async function markOutboxFailed(db: Db, id: number, error: string): Promise<void> {
  await db.execute(
    sql`update outbox set failed_at = now(), locked_until = null, last_error = ${error}
        where id = ${id} and completed_at is null and failed_at is null`,
  );
}

export interface JobHealth {
  /** Outbox rows not yet completed or failed. */
  pending: number;
  /** Outbox jobs that gave up (kept until an operator looks). */
  failed: number;
  /** Sweep ticks that failed in the last 24 hours. */
  failedSweeps24h: number;
}

/** The counts `/healthz` and the Dash show; read from the database, so the same in every mode. */
export async function jobHealth(db: Db): Promise<JobHealth> {
  const [row] = await query<{ pending: number; failed: number; failed_sweeps: number }>(
    db,
    sql`select
          (select count(*)::int from outbox where completed_at is null and failed_at is null) as pending,
          (select count(*)::int from outbox where failed_at is not null) as failed,
          (select count(*)::int from job_receipts
             where error is not null and created_at > now() - interval '24 hours') as failed_sweeps`,
  );
  return { pending: Number(row?.pending ?? 0), failed: Number(row?.failed ?? 0), failedSweeps24h: Number(row?.failed_sweeps ?? 0) };
}
