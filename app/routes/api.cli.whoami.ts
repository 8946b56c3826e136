import type { Route } from "./+types/api.cli.whoami";
import { cliJson, requireCliUser } from "../cli-api.server.ts";
import { listOrgsOf } from "../../server/orgs/account.ts";

/** The signed-in person and their orgs. */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const { orgs } = await listOrgsOf(context.services, user.id);
    return { user, orgs };
  });
}
