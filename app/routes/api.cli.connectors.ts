import type { Route } from "./+types/api.cli.connectors";
import { cliJson, cliOrgAction, cliQueryCtx } from "../cli-api.server.ts";
import { listConnectors, revokeConnector, revokeConnectorInput } from "../../server/intake/connectors.ts";
import { createConnector, createConnectorInput } from "../../server/intake/create.ts";

/** `retasc connector list`: the org's connectors, status included, never a secret. */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx } = await cliQueryCtx(request, context);
    return listConnectors(ctx, {});
  });
}

/** `{ orgId, action: "add" | "revoke", ... }`: owners and admins; add answers the webhook secret, once. */
export function action({ request, context }: Route.ActionArgs) {
  return cliOrgAction(request, context, {
    add: (ctx, input) => createConnector(ctx, createConnectorInput.parse(input)),
    revoke: (ctx, input) => revokeConnector(ctx, revokeConnectorInput.parse(input)),
  });
}
