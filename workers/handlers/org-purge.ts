import { purgeOrg } from "../../server/orgs/purge.ts";
import type { JobPayload } from "../../server/outbox/jobs.ts";
import type { JobContext } from "../job.ts";

/** Removes a deleted org's rows in batches; run again after a crash, it goes on where it stopped. */
export function orgPurge(ctx: JobContext, payload: JobPayload<"org.purge">) {
  return purgeOrg(ctx.services.db, payload.orgId, { keepOutboxId: ctx.outboxId });
}
