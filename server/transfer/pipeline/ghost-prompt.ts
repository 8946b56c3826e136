import { and, eq, inArray, not, sql } from "drizzle-orm";
import { importGhosts } from "../../../db/schema/index.ts";
import { recordActivity } from "../../activity/index.ts";
import type { Ctx } from "../../context.ts";
import { inTransaction } from "../../issues/store.ts";
import { claimableGhosts, offeredGhosts } from "./ghosts.ts";

/**
 * list_claimable_ghosts: the placeholders an import left that the caller's human could claim (their
 * verified email), and what to do with them. Any member sees their own, as on the Dash; claiming
 * stays theirs alone (claimGhost checks the email again).
 */
export async function listClaimableGhosts(ctx: Ctx) {
  const { verified, ghosts } = await claimableGhosts(ctx);
  const offered = ghosts.filter((g) => !g.dismissed).length;
  const next = !verified
    ? "Your human's email is not verified here, so no placeholder can be theirs yet: once it is, call again."
    : offered > 0
      ? "Ask your human whether these are them. Yes: claim_ghost with the ghostId they pick (or none: all offered). No: dismiss_ghost_prompt."
      : ghosts.length > 0
        ? "Your human dismissed these; claim_ghost with a ghostId still claims one if they change their mind."
        : "No unclaimed placeholder carries your human's email.";
  return { ghosts, next };
}

/**
 * dismiss_ghost_prompt: the caller's human says none of the placeholders offered to them is them.
 * Those are offered no more (setup_status, claim_ghost without a ghostId); a later import's new ones
 * are. Free, as claiming an identity is membership; recorded in the activity log.
 */
export async function dismissGhostPrompt(ctx: Ctx) {
  const userId = ctx.principal.userId!;
  const offered = (await offeredGhosts(ctx)).map((g) => g.ghostId);
  if (offered.length === 0) return { dismissed: [], next: "Nothing was offered to your human: nothing to dismiss." };
  await inTransaction(ctx, async (scope) => {
    await scope.tx
      .update(importGhosts)
      .set({ dismissedBy: sql`array_append(${importGhosts.dismissedBy}, ${userId})` })
      .where(and(eq(importGhosts.orgId, ctx.principal.orgId), inArray(importGhosts.id, offered), not(sql`${userId} = any(${importGhosts.dismissedBy})`)));
    await recordActivity(scope, { kind: "ghost_prompt_dismissed", detail: { ghostIds: offered } });
  });
  return { dismissed: offered, next: "Not offered again; a later import's placeholders will be. claim_ghost with a ghostId still claims one." };
}
