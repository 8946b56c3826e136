import { fanOut } from "../../server/notify/route.ts";
import type { JobPayload } from "../../server/outbox/jobs.ts";
import type { JobContext } from "../job.ts";
import { onceByReceipt } from "../receipts.ts";

/**
 * An issue event to tell people about: fanned out once (the receipt and the send jobs commit
 * together) to one notify.send per channel of the person it concerns.
 */
export async function notifyIssueEvent(ctx: JobContext, payload: JobPayload<"notify.issue_event">) {
  const outcome = await onceByReceipt(ctx.services.db, ctx.key, "notify.issue_event", (tx) => fanOut(tx, payload));
  return { queued: outcome.first ? outcome.result : 0 };
}
