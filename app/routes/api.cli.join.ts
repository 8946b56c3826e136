import type { Route } from "./+types/api.cli.join";
import { cliCtx, cliJson, readBody, requireCliUser } from "../cli-api.server.ts";
import { redeemInvite } from "../../server/orgs/invite-redeem.ts";
import { listProjects } from "../../server/orgs/projects.ts";

/** Redeems an invite for the signed-in person; replies with the org and its projects to bind to. */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const body = await readBody(request);
    const joined = await redeemInvite(context.services, { userId: user.id, code: String(body.code ?? "") });
    const { projects } = await listProjects(await cliCtx(context, user, joined.orgId), {});
    return { ...joined, projects };
  });
}
