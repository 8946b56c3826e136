import { changeTypes } from "../../constants/change-types.ts";
import type { Ctx, Principal } from "../context.ts";
import { DomainError } from "../errors.ts";
import type { SaveInput } from "./schemas.ts";
import { backfilled, backfillStep, NAMED_MAX, similarOpenIssues } from "./similar.ts";
import { currentIdentifiers } from "./lookups.ts";
import { type WriteScope } from "./store.ts";

/**
 * What an agent's create must declare beyond a person's (decision 059): the gates hold agents,
 * who file in bulk and unseen; a person on the Dash, intake and imports pass without them.
 */
export const gatesApply = (principal: Principal) => principal.kind === "agent";

/** An agent's create names the kind of change, so usage can be split by it; a later update may correct it. */
export function requireChangeType(principal: Principal, input: SaveInput): void {
  if (!gatesApply(principal) || input.changeType) return;
  throw new DomainError(
    "CHANGE_TYPE_REQUIRED",
    "changeType is required to create an issue",
    `Pass changeType, one of ${changeTypes.join(", ")} (Conventional Commits): what the change is, not what it touches.`,
    { changeTypes },
  );
}


/**
 * In an org whose issues from before the index are not all indexed yet (sweep.issue-terms walks
 * them), a gated create indexes the next batch first, in a short transaction of its own.
 */
export async function catchUpTermsFor(ctx: Ctx): Promise<void> {
  if (await backfilled(ctx.db, ctx.principal.orgId)) return;
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  await backfillStep(ctx.db, cipher, ctx.principal.orgId);
}

/**
 * An agent's create is refused while open issues look like the same or adjacent work and the
 * call has not said it read them (decision 066): `reviewedSimilar` lists those it read, and a
 * `blockedBy` on one counts as read. Computed afresh on every call, so a look-alike filed since
 * the last refusal is named too. Runs under the create's lock on the project's row.
 */
export async function requireDuplicateCheck(scope: WriteScope, input: SaveInput): Promise<void> {
  const { tx, cipher, ctx } = scope;
  if (!gatesApply(ctx.principal)) return;
  const similar = await similarOpenIssues(tx, cipher, ctx.principal, input.title!, input.body);
  const named = [...(input.reviewedSimilar ?? []), ...(input.blockedBy ?? [])];
  // Named by an old prefix's identifier, a look-alike counts as read too (decision 089).
  const read = new Set(similar.some((issue) => !named.includes(issue.identifier)) ? await currentIdentifiers(tx, ctx.principal.orgId, named) : named);
  const unread = similar.filter((issue) => !read.has(issue.identifier)).slice(0, NAMED_MAX);
  if (unread.length === 0) return;
  const ids = unread.map((issue) => issue.identifier);
  throw new DomainError(
    "DUPLICATE_CHECK_REQUIRED",
    `open issues look like the same or adjacent work: ${unread.map((issue) => `${issue.identifier} "${issue.title}"`).join(", ")}`,
    `Read them (get_issue). If one is this work, do not file it: work on or comment on that one. If this one is new, call save_issue again with reviewedSimilar: ${JSON.stringify(ids)}, or with blockedBy naming the ones it waits on.`,
    { similar: unread },
  );
}
