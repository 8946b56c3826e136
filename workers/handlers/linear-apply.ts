import type { JobPayload } from "../../server/outbox/jobs.ts";
import { applyLinearRun } from "../../server/transfer/linear/apply-run.ts";
import type { JobContext } from "../catalog.ts";

/** A Linear import's staged pages applied (server/transfer/linear/apply-run.ts): resumes where a crashed worker stopped. */
export async function linearApply(ctx: JobContext, payload: JobPayload<"linear.apply">) {
  return applyLinearRun(ctx.services, payload.runId);
}
