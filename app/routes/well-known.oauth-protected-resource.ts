import { protectedResourceMetadata } from "../../server/auth/oauth.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import type { Route } from "./+types/well-known.oauth-protected-resource";

/**
 * `/.well-known/oauth-protected-resource` (and `/mcp` appended, where RFC 9728 puts the document
 * of the `/mcp` resource): which authorization server signs MCP clients in. A 401 from /mcp
 * points here.
 */
export function loader({ request, context }: Route.LoaderArgs) {
  return Response.json(protectedResourceMetadata(publicBaseUrl(request, context.services.config)), {
    headers: { "cache-control": "public, max-age=3600", "access-control-allow-origin": "*" },
  });
}
