import type { Route } from "./+types/api.auth.$";
import { authOf } from "../auth.server.ts";

/** better-auth's own endpoints: sign-in callbacks, sessions, the device flow the CLI polls. */
export function loader({ request, context }: Route.LoaderArgs) {
  return authOf(context).handler(request);
}

export function action({ request, context }: Route.ActionArgs) {
  return authOf(context).handler(request);
}
