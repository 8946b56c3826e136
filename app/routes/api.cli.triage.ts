import type { Route } from "./+types/api.cli.triage";
import { cliJson, cliOrgAction, cliQueryCtx } from "../cli-api.server.ts";
import { acceptTriage, discardHeldComment, listTriage, releaseHeldComment } from "../../server/intake/triage.ts";

/**
 * `retasc triage`: outsiders' work waiting for a person (server/intake/triage.ts), as the
 * signed-in person. Only a person's session reaches it: agent keys and OAuth tokens are not
 * sessions (requireCliUser), and the functions refuse any principal but a person.
 */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx, params } = await cliQueryCtx(request, context);
    const limit = Number(params.get("limit") ?? 20);
    return listTriage(ctx, { limit: Number.isFinite(limit) ? limit : 20 });
  });
}

/** `{ orgId, action: "accept", identifier, digest }`, `{ orgId, action: "release", comment, digest }` or `{ orgId, action: "discard", comment }`. */
export function action({ request, context }: Route.ActionArgs) {
  return cliOrgAction(request, context, {
    accept: (ctx, input) => acceptTriage(ctx, input as { identifier: string; digest: string }),
    release: (ctx, input) => releaseHeldComment(ctx, input as { comment: string; digest: string }),
    discard: (ctx, input) => discardHeldComment(ctx, input as { comment: string }),
  });
}
