import type { Route } from "./+types/api.cli.sign-in-methods";
import { cliJson } from "../cli-api.server.ts";
import { signInMethods } from "../../server/auth/index.ts";

/** How people sign in here, so `retasc login --google` can say at once when Google is not set up. */
export function loader({ context }: Route.LoaderArgs) {
  return cliJson(context, async () => signInMethods(context.services.config));
}
