import type { Route } from "./+types/api.cli.keys";
import { cliCtx, cliJson, methodNotAllowed, readBody, requireCliUser } from "../cli-api.server.ts";
import { keyIdInput, listKeys, mintKey, mintKeyInput, revokeKey, rotateKey } from "../../server/orgs/keys.ts";

export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const params = new URL(request.url).searchParams;
    const ctx = await cliCtx(context, user, params.get("orgId"));
    return listKeys(ctx, { includeRevoked: params.get("includeRevoked") === "true" });
  });
}

/** `{ orgId, action: "mint" | "rotate" | "revoke", ... }`: the caller's own keys, or anyone's for owners and admins. */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const { orgId, action, ...input } = await readBody(request);
    const ctx = await cliCtx(context, user, orgId);
    switch (action) {
      case "mint":
        return mintKey(ctx, mintKeyInput.parse(input));
      case "rotate":
        return rotateKey(ctx, keyIdInput.parse(input));
      case "revoke":
        return revokeKey(ctx, keyIdInput.parse(input));
      default:
        return methodNotAllowed();
    }
  });
}
