import { oauthProviderAuthServerMetadata } from "@better-auth/oauth-provider";
import { authOf } from "../auth.server.ts";
import type { Route } from "./+types/well-known.oauth-authorization-server";

/**
 * RFC 8414 authorization server metadata. The issuer is `<base>/api/auth`, so the document's
 * place is `/.well-known/oauth-authorization-server/api/auth`; the root path serves it too, for
 * clients that look there first.
 */
export function loader({ request, context }: Route.LoaderArgs) {
  return oauthProviderAuthServerMetadata(authOf(context), { headers: { "access-control-allow-origin": "*" } })(request);
}
