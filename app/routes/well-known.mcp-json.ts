import { serverCard } from "../../server/mcp/discovery.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import type { Route } from "./+types/well-known.mcp-json";

/** `/.well-known/mcp.json`: the MCP server card (endpoint, transport, auth). */
export function loader({ request, context }: Route.LoaderArgs) {
  return Response.json(serverCard(publicBaseUrl(request, context.services.config)), {
    headers: { "cache-control": "public, max-age=3600", "access-control-allow-origin": "*" },
  });
}
