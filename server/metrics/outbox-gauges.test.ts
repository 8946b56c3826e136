import { sql } from "drizzle-orm";
import { z } from "zod";
import { expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { transactionWithNotices } from "../events/index.ts";
import { createEnqueue, markOutboxCompleted } from "../outbox/index.ts";
import { useTestServices } from "../testing/database.ts";
import { readDatabase } from "./index.ts";

/**
 * The outbox's gauges (`retasc_outbox_pending`, `retasc_outbox_oldest_pending_age_seconds`) as a
 * scrape reads them: a row not yet done is counted, with its age; once done, both are 0 again. (The
 * swarm's scrapes every 3 s may find the outbox empty each time: its jobs are done within a second.)
 * Read through `readDatabase`, not a registered scrape: the registry is the process's, and vitest's
 * worker runs other files after this one.
 */
const env = useTestServices();
const enqueue = createEnqueue({ "test.probe": z.object({ n: z.number() }) });

it("count the rows not yet done and the oldest one's age, and fall back to 0 when it is done", async () => {
  expect(await readDatabase(env.services.db)).toMatchObject({ outboxPending: 0, outboxOldestAgeSeconds: 0 });
  await transactionWithNotices(env.services.db, (tx) => enqueue(tx, "test.probe", { n: 1 }));
  await query(env.services.db, sql`update outbox set created_at = now() - interval '90 seconds'`);
  const waiting = await readDatabase(env.services.db);
  expect(waiting.outboxPending).toBe(1);
  expect(waiting.outboxOldestAgeSeconds).toBeGreaterThanOrEqual(90);
  const [row] = await query<{ id: number }>(env.services.db, sql`select id from outbox`);
  await markOutboxCompleted(env.services.db, Number(row!.id));
  expect(await readDatabase(env.services.db)).toMatchObject({ outboxPending: 0, outboxOldestAgeSeconds: 0 });
});
