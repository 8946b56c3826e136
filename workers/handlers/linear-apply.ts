import type { JobPayload } from "../../server/outbox/jobs.ts";
import { applyLinearRun, failLinearRun } from "../../server/transfer/linear/apply-run.ts";
import { isPermanent, type JobContext } from "../catalog.ts";

/**
 * A Linear import's staged pages applied (server/transfer/linear/apply-run.ts): resumes where a
 * crashed worker stopped. When the runner is about to give up on the job (an error no retry
 * changes, or the last attempt), the run ends `failed` (APPLY_FAILED) first: left `applying`,
 * it would hold the org's one import slot for ever.
 */
export async function linearApply(ctx: JobContext, payload: JobPayload<"linear.apply">) {
  try {
    return await applyLinearRun(ctx.services, payload.runId);
  } catch (error) {
    if (isPermanent(error) || ctx.attempt >= ctx.services.config.JOB_ATTEMPTS) {
      await failLinearRun(ctx.services, payload.runId, "APPLY_FAILED").catch((e: unknown) => ctx.log.warn({ err: e }, "could not mark the Linear import failed"));
    }
    throw error;
  }
}
