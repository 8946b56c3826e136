import { apiCatalog, linksetContentType } from "../../server/mcp/discovery.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { publicPagePaths } from "../../server/site/registry.ts";
import type { Route } from "./+types/well-known.api-catalog";

/** `/.well-known/api-catalog` (RFC 9727). HEAD answers with the Link header alone. */
export function loader({ request, context }: Route.LoaderArgs) {
  const origin = publicBaseUrl(request, context.services.config);
  return new Response(JSON.stringify(apiCatalog(origin, publicPagePaths(context.services.config))), {
    headers: {
      "content-type": linksetContentType,
      link: `<${origin}/.well-known/api-catalog>; rel="api-catalog"`,
      "cache-control": "public, max-age=3600",
      "access-control-allow-origin": "*",
    },
  });
}
