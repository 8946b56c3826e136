import { TokenRefused } from "../../server/intake/providers.ts";
import { OutboundRefused } from "../../server/outbound/address.ts";
import { writeBack } from "../../server/intake/write-back.ts";
import type { JobPayload } from "../../server/outbox/jobs.ts";
import { PermanentJobError, type JobContext } from "../job.ts";

/** Closes a finished issue's source; a refused token or address is not retried (the connector's card shows it), anything else is. */
export async function writeBackClose(ctx: JobContext, payload: JobPayload<"intake.write_back">) {
  try {
    return await writeBack(ctx.services, payload);
  } catch (error) {
    if (error instanceof TokenRefused || error instanceof OutboundRefused) throw new PermanentJobError(error.message);
    throw error;
  }
}
