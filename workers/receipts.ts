import { sql } from "drizzle-orm";
import { query, type Db } from "../db/client.ts";
import { transactionWithNotices } from "../server/events/index.ts";

/**
 * Counts one more arrival at `key` and says whether it is the first. Inside a transaction,
 * a concurrent second arrival waits on the key until the first commits, then sees it.
 */
export async function arriveAt(db: Db, key: string, job: string): Promise<boolean> {
  const [row] = await query<{ runs: number }>(
    db,
    sql`insert into job_receipts (key, job) values (${key}, ${job})
        on conflict (key) do update set runs = job_receipts.runs + 1, updated_at = now()
        returning runs`,
  );
  return Number(row!.runs) === 1;
}

/**
 * Runs `effect` at most once per key: the receipt is written in the same transaction as the
 * effect, so a job delivered twice (BullMQ and the outbox are at-least-once) takes effect once.
 */
export async function onceByReceipt<T>(
  db: Db,
  key: string,
  job: string,
  effect: (tx: Db) => Promise<T>,
): Promise<{ first: true; result: T } | { first: false }> {
  return transactionWithNotices(db, async (tx) => {
    if (!(await arriveAt(tx, key, job))) return { first: false as const };
    return { first: true as const, result: await effect(tx) };
  });
}

/** Stores what a run produced (counts and ids only) or the label of its failure. */
export async function settleReceipt(
  db: Db,
  key: string,
  outcome: { result: Record<string, unknown> } | { error: string },
): Promise<void> {
  if ("result" in outcome) {
    await db.execute(sql`update job_receipts set result = ${JSON.stringify(outcome.result)}::jsonb, updated_at = now() where key = ${key}`);
  } else {
    await db.execute(sql`update job_receipts set error = ${outcome.error}, updated_at = now() where key = ${key}`);
  }
}
