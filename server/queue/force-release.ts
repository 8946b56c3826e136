import { z } from "zod";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError } from "../errors.ts";
import { identifierSchema } from "../issues/schemas.ts";
import { findIssue } from "../issues/lookups.ts";
import { inTransaction } from "../issues/store.ts";
import { actorOf, requireRole } from "../orgs/access.ts";
import { currentHolder, describeHolder, endLease } from "../issues/fencing.ts";
import { meter } from "../usage/meter.ts";

export const forceReleaseInput = z.object({
  identifier: identifierSchema,
  reason: z.string().trim().min(1, "a reason is required").max(2000).describe("why the claim is taken back; kept in the activity log"),
});

/**
 * Takes a live claim back from its holder without their token: for an agent that is stuck
 * (still heartbeating, or hung with a long lease) rather than dead. Owners and admins only.
 * The holder's next fenced write is refused with STALE_CLAIM; its checkpoint stays.
 */
export async function forceRelease(ctx: Ctx, raw: z.input<typeof forceReleaseInput>) {
  const input = forceReleaseInput.parse(raw);
  requireRole(await actorOf(ctx), ["owner", "admin"], "releasing another principal's claim");
  return inTransaction(ctx, async (scope) => {
    const row = await findIssue(scope.tx, ctx.principal, input.identifier, { forUpdate: true });
    const holder = await currentHolder(scope.tx, row, scope.now);
    if (!holder) {
      throw new DomainError(
        "CONFLICT",
        `${row.identifier} is not held by anyone`,
        "Nothing to release: it is already available (an expired lease counts as released).",
        { identifier: row.identifier },
      );
    }
    await endLease(scope, row, "released");
    meter(scope, "force_release", "plumbing", row.id);
    await recordActivity(scope, {
      issueId: row.id,
      kind: "force_released",
      facts: { fence: row.fence, holderRuntime: holder.runtime, holderUserId: holder.userId, holderKeyId: holder.keyId },
      detail: { reason: input.reason },
    });
    await ctx.events.publish(scope.tx, { orgId: ctx.principal.orgId, kind: "claim.released", issueId: row.id, identifier: row.identifier });
    return { identifier: row.identifier, released: true as const, holder: describeHolder(holder) };
  });
}
