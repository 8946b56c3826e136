import type { Route } from "./+types/api.cli.keys";
import { cliJson, cliOrgAction, cliQueryCtx } from "../cli-api.server.ts";
import { keyIdInput, listKeys, mintKey, mintKeyInput, revokeKey, rotateKey } from "../../server/orgs/keys.ts";

/** The caller's keys (everyone's for owners and admins), a page at a time: `cursor` is the last page's `nextCursor`. */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx, params } = await cliQueryCtx(request, context);
    return listKeys(ctx, { includeRevoked: params.get("includeRevoked") === "true", cursor: params.get("cursor") ?? undefined });
  });
}

/** `{ orgId, action: "mint" | "rotate" | "revoke", ... }`: the caller's own keys; owners anyone's, admins ordinary members'. */
export function action({ request, context }: Route.ActionArgs) {
  return cliOrgAction(request, context, {
    mint: (ctx, input) => mintKey(ctx, mintKeyInput.parse(input)),
    rotate: (ctx, input) => rotateKey(ctx, keyIdInput.parse(input)),
    revoke: (ctx, input) => revokeKey(ctx, keyIdInput.parse(input)),
  });
}
