import type { Route } from "./+types/api.cli.identity";
import { cliJson, cliOrgAction, cliQueryCtx } from "../cli-api.server.ts";
import { claimableGhosts, claimGhost } from "../../server/transfer/pipeline/ghosts.ts";
import { dismissGhostPrompt } from "../../server/transfer/pipeline/ghost-prompt.ts";

/**
 * `retasc identity`: the placeholders an import left that the signed-in person may claim (their
 * verified email), the same functions list_claimable_ghosts, claim_ghost and dismiss_ghost_prompt
 * call over MCP. Only a person's session reaches it (requireCliUser).
 */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => claimableGhosts((await cliQueryCtx(request, context)).ctx));
}

/** `{ orgId, action: "claim", ghostId }` (one placeholder, picked at a terminal) or `{ orgId, action: "dismiss" }` (none of them is me). */
export function action({ request, context }: Route.ActionArgs) {
  return cliOrgAction(request, context, {
    claim: (ctx, input) => claimGhost(ctx, input as { ghostId: string }),
    dismiss: (ctx) => dismissGhostPrompt(ctx),
  });
}
