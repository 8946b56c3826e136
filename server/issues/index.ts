import type { z } from "zod";
import type { Ctx } from "../context.ts";
import { refuseWhileFrozen } from "../orgs/freeze.ts";
import { createIssue } from "./create.ts";
import { finishHeld, isPlainFinish } from "./finish.ts";
import { saveIssueInput } from "./schemas.ts";
import { updateIssue } from "./update.ts";

/**
 * The issue operations, one file each: create.ts, update.ts (with transitions.ts, the status
 * rules), finish.ts (the one-statement finish), relations.ts, read.ts.
 */
export { getIssue, listIssues } from "./read.ts";
export { addRelation, removeRelation } from "./relations.ts";

/** Create (no identifier) or update an issue. Finishing, review and cancel go through here with the claimToken. */
export async function saveIssue(ctx: Ctx, raw: z.input<typeof saveIssueInput>) {
  const input = saveIssueInput.parse(raw);
  refuseWhileFrozen(ctx.principal);
  if (!input.identifier) return createIssue(ctx, input);
  if (isPlainFinish(input)) {
    const finished = await finishHeld(ctx, input.identifier, input.claimToken);
    if (finished) return finished;
  }
  return updateIssue(ctx, input, input.identifier);
}
