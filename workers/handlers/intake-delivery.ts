import { processDelivery } from "../../server/intake/process.ts";
import type { JobPayload } from "../../server/outbox/jobs.ts";
import type { JobContext } from "../job.ts";

/** A verified intake delivery becomes (or updates) a Retasc issue; effect once by the delivery row (server/intake/process.ts). */
export async function intakeDelivery(ctx: JobContext, payload: JobPayload<"intake.delivery">) {
  return processDelivery(ctx.services, payload.deliveryId);
}
