import type { Route } from "./+types/api.cli.projects";
import { cliCtx, cliJson, cliQueryCtx, readBody, requireCliUser } from "../cli-api.server.ts";
import { addProject } from "../../server/orgs/account.ts";
import { listProjects } from "../../server/orgs/projects.ts";

export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx } = await cliQueryCtx(request, context);
    return listProjects(ctx, {});
  });
}

/** Creates a project (owner or admin). */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const body = await readBody(request);
    const ctx = await cliCtx(context, user, body.orgId);
    return addProject(ctx, { name: String(body.name ?? ""), prefix: String(body.prefix ?? "") });
  });
}
