import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import { DomainError } from "../../server/errors.ts";
import { createEnqueue } from "../../server/outbox/index.ts";
import { jobCatalog } from "../catalog.ts";
import { onceByReceipt } from "../receipts.ts";

/**
 * A job for tests of the machinery: it records every start (committed at once, so a run cut
 * short by a crash stays visible), can sleep, fail a number of times, or fail for good, and
 * takes effect once through its receipt like a real handler.
 */
export const probeSchemas = {
  "test.probe": z
    .object({
      tag: z.string(),
      sleepMs: z.number().int().min(0).default(0),
      failTimes: z.number().int().min(0).default(0),
      permanent: z.boolean().default(false),
      /** The org the job is of (its outbox row's org_id), for the freeze's tests. */
      orgId: z.string().optional(),
    })
    .strict(),
};

export const enqueueProbe = createEnqueue(probeSchemas);

export const probeJobs = jobCatalog(probeSchemas, {
  "test.probe": async (ctx, payload) => {
    const { db } = ctx.services;
    await db.execute(
      sql`insert into job_receipts (key, job, result)
          values (${`probe-start:${ctx.outboxId}:${crypto.randomUUID()}`}, 'test.probe.start',
                  ${JSON.stringify({ outboxId: ctx.outboxId, attempt: ctx.attempt, pid: process.pid })}::jsonb)`,
    );
    if (payload.permanent) throw new DomainError("INVALID_INPUT", "probe refuses for good", "none");
    if (ctx.attempt <= payload.failTimes) throw new Error("transient probe failure");
    if (payload.sleepMs > 0) await new Promise((resolve) => setTimeout(resolve, payload.sleepMs));
    return onceByReceipt(db, ctx.key, "test.probe", async () => payload.tag);
  },
});

/** How the probe rows of this database fared: starts per outbox id, effects, duplicates. */
export async function probeReport(db: Db) {
  const starts = await query<{ outbox_id: string; n: number }>(
    db,
    sql`select result->>'outboxId' as outbox_id, count(*)::int as n from job_receipts
        where job = 'test.probe.start' group by 1`,
  );
  const effects = await query<{ key: string; runs: number }>(
    db,
    sql`select key, runs from job_receipts where job = 'test.probe' order by key`,
  );
  const outbox = await query<{ id: string; completed: boolean; failed: boolean; relayed: boolean; attempts: number; last_error: string | null }>(
    db,
    sql`select id, completed_at is not null as completed, failed_at is not null as failed,
               relayed_at is not null as relayed, attempts, last_error
        from outbox where job = 'test.probe' order by id`,
  );
  return {
    startsByOutboxId: new Map(starts.map((s) => [Number(s.outbox_id), Number(s.n)])),
    effects: effects.map((e) => ({ key: e.key, runs: Number(e.runs) })),
    outbox: outbox.map((o) => ({ ...o, id: Number(o.id), attempts: Number(o.attempts) })),
  };
}
