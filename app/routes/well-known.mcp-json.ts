import { publicOrigin, serverCard } from "../../server/mcp/discovery.ts";
import type { Route } from "./+types/well-known.mcp-json";

/** `/.well-known/mcp.json`: the MCP server card (endpoint, transport, auth). */
export function loader({ request, context }: Route.LoaderArgs) {
  return Response.json(serverCard(publicOrigin(request, context.services.config)), {
    headers: { "cache-control": "public, max-age=3600", "access-control-allow-origin": "*" },
  });
}
