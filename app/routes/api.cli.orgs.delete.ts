import type { Route } from "./+types/api.cli.orgs.delete";
import { cliCtx, cliJson, readBody, requireCliUser } from "../cli-api.server.ts";
import { deleteOrg } from "../../server/orgs/delete.ts";

/** `retasc org delete`: POST `{ orgId, confirmName }`, the owner's, with the org's name as they typed it. */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const { orgId, confirmName } = await readBody(request);
    const ctx = await cliCtx(context, user, orgId);
    return deleteOrg(ctx, { confirmName: typeof confirmName === "string" ? confirmName : undefined });
  });
}
