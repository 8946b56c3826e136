import type { JobPayload } from "../../server/outbox/jobs.ts";
import type { JobContext } from "../catalog.ts";
import { onceByReceipt } from "../receipts.ts";

/**
 * An issue event to tell people about. Sending DMs belongs to the notifications issue; until
 * then the delivery is recorded once per outbox row, which is the idempotency the sender
 * will build on (a repeat delivery finds the receipt and does nothing).
 */
export async function notifyIssueEvent(ctx: JobContext, payload: JobPayload<"notify.issue_event">) {
  const outcome = await onceByReceipt(ctx.services.db, ctx.key, "notify.issue_event", async () => payload.kind);
  return { delivered: outcome.first };
}
