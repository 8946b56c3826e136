import { deliver } from "../../server/notify/deliver.ts";
import type { JobPayload } from "../../server/outbox/jobs.ts";
import type { JobContext } from "../job.ts";

/** One message to one person on one channel; the delivery row is its receipt (server/notify/deliver.ts). */
export async function notifySend(ctx: JobContext, payload: JobPayload<"notify.send">) {
  return { outcome: await deliver(ctx.services, ctx.log, ctx.key, payload) };
}
