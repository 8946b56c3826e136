import { landingMarkdown } from "../../server/mcp/discovery.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import type { Route } from "./+types/index-md";

/** `/index.md`: the landing page as Markdown, for agents. */
export function loader({ request, context }: Route.LoaderArgs) {
  return new Response(landingMarkdown(publicBaseUrl(request, context.services.config)), {
    headers: { "content-type": "text/markdown; charset=utf-8", "cache-control": "public, max-age=300" },
  });
}
