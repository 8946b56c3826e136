import type { JobPayload } from "../../server/outbox/jobs.ts";
import { applyImportRun, failImportRun } from "../../server/transfer/pipeline/apply-run.ts";
import { isPermanent, type JobContext } from "../job.ts";

/**
 * An import's staged pages applied, any source's (server/transfer/pipeline/apply-run.ts; the job
 * keeps the name it had when Linear was the only source): resumes where a
 * crashed worker stopped. When the runner is about to give up on the job (an error no retry
 * changes, or the last attempt), the run ends `failed` (APPLY_FAILED) first: left `applying`,
 * it would hold the org's one import slot for ever.
 */
export async function linearApply(ctx: JobContext, payload: JobPayload<"linear.apply">) {
  try {
    return await applyImportRun(ctx.services, payload.runId);
  } catch (error) {
    if (isPermanent(error) || ctx.attempt >= ctx.services.config.JOB_ATTEMPTS) {
      await failImportRun(ctx.services, payload.runId, "APPLY_FAILED").catch((e: unknown) => ctx.log.warn({ err: e }, "could not mark the import failed"));
    }
    throw error;
  }
}
