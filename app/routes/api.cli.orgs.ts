import type { Route } from "./+types/api.cli.orgs";
import { cliJson, readBody, requireCliUser } from "../cli-api.server.ts";
import { createOrgFor, listOrgsOf } from "../../server/orgs/account.ts";

export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => listOrgsOf(context.services, (await requireCliUser(request, context)).id));
}

/** Creates an org owned by the caller. */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const body = await readBody(request);
    return createOrgFor(context.services, user.id, { name: String(body.name ?? "") });
  });
}
