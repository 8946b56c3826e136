import type { Ctx, Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { humanPrincipal } from "../orgs/access.ts";
import { acceptTriage, heldForIssue, releaseHeldComment } from "./triage.ts";

/** Test helpers: a person at the Dash reading what is held and letting it in, as the triage box does. */
export const personCtx = (services: Services, orgId: string, userId: string): Ctx => withPrincipal(services, humanPrincipal(orgId, userId, "dash"));

/** The person reads `identifier`'s held text and accepts exactly it. */
export async function personAccepts(ctx: Ctx, identifier: string) {
  const { issue } = await heldForIssue(ctx, { identifier });
  if (!issue) throw new Error(`${identifier} is not awaiting triage`);
  return acceptTriage(ctx, { identifier, digest: issue.digest });
}

/** The person reads the comments held on `identifier` and releases each. */
export async function personReleasesComments(ctx: Ctx, identifier: string) {
  const { comments } = await heldForIssue(ctx, { identifier });
  for (const c of comments) await releaseHeldComment(ctx, { comment: c.id, digest: c.digest });
  return comments.length;
}
