import { sql } from "drizzle-orm";
import { z } from "zod";
import { expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { transactionWithNotices } from "../events/index.ts";
import { createEnqueue, markOutboxCompleted } from "../outbox/index.ts";
import { useTestServices } from "../testing/database.ts";
import { waitFor } from "../testing/wait.ts";
import { registerDatabaseGauges, renderMetrics } from "./index.ts";

/**
 * The outbox's gauges at scrape time: a row not yet done is counted, with its age; once done, the
 * depth is 0 again. (The swarm's scrapes every 3 s may find the outbox empty each time: its jobs
 * are done within a second.)
 */
const env = useTestServices();
const enqueue = createEnqueue({ "test.probe": z.object({ n: z.number() }) });
const gauge = async (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec((await renderMetrics()).body)?.[1]);

it("count the rows not yet done and the oldest one's age, and fall back to 0 when it is done", async () => {
  registerDatabaseGauges(env.tdb.database);
  expect(await gauge("retasc_outbox_pending")).toBe(0);
  await transactionWithNotices(env.services.db, (tx) => enqueue(tx, "test.probe", { n: 1 }));
  await query(env.services.db, sql`update outbox set created_at = now() - interval '90 seconds'`);
  // A read is reused for 2 s (several Prometheus servers scraping at once cost one read).
  await waitFor(async () => ((await gauge("retasc_outbox_pending")) === 1 ? true : null), 10_000, "the row counted");
  expect(await gauge("retasc_outbox_oldest_pending_age_seconds")).toBeGreaterThanOrEqual(90);
  const [row] = await query<{ id: number }>(env.services.db, sql`select id from outbox`);
  await markOutboxCompleted(env.services.db, Number(row!.id));
  await waitFor(async () => ((await gauge("retasc_outbox_pending")) === 0 ? true : null), 10_000, "the done row left out");
  expect(await gauge("retasc_outbox_oldest_pending_age_seconds")).toBe(0);
});
