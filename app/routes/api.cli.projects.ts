import type { Route } from "./+types/api.cli.projects";
import { cliCtx, cliJson, cliQueryCtx, readBody, requireCliUser } from "../cli-api.server.ts";
import { addProject } from "../../server/orgs/account.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { renameProjectPrefix, type RenamePrefixInput } from "../../server/orgs/rename-prefix.ts";
import { setVerification, type SetVerificationInput } from "../../server/verification/settings.ts";

export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx } = await cliQueryCtx(request, context);
    return listProjects(ctx, {});
  });
}

/**
 * Creates a project; `action: "verification"` sets how one verifies finishes (`retasc project verification`);
 * `action: "rename-prefix"` renames one's prefix (`retasc project rename-prefix`, decision 089). Owner or admin.
 */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const { orgId, action, ...body } = await readBody(request);
    const ctx = await cliCtx(context, user, orgId);
    if (action === "verification") return setVerification(ctx, body as SetVerificationInput);
    if (action === "rename-prefix") return renameProjectPrefix(ctx, body as RenamePrefixInput);
    return addProject(ctx, { name: String(body.name ?? ""), prefix: String(body.prefix ?? "") });
  });
}
