import type { Route } from "./+types/api.auth.$";
import { handleAuthRequest } from "../auth.server.ts";

/** better-auth's own endpoints: sign-in callbacks, sessions, the device flow the CLI polls. */
export function loader({ request, context }: Route.LoaderArgs) {
  return handleAuthRequest(request, context);
}

export function action({ request, context }: Route.ActionArgs) {
  return handleAuthRequest(request, context);
}
