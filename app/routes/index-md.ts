import { landingMarkdown } from "../../server/mcp/discovery.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { publicPage, publicPagePaths } from "../../server/site/registry.ts";
import type { Route } from "./+types/index-md";

/** `/index.md`: the landing page as Markdown, for agents. */
export function loader({ request, context }: Route.LoaderArgs) {
  const { config } = context.services;
  const origin = publicBaseUrl(request, config);
  const pages = publicPagePaths(config).flatMap((path) => publicPage(path, config, origin) ?? []);
  return new Response(landingMarkdown(origin, pages), {
    headers: { "content-type": "text/markdown; charset=utf-8", "cache-control": "public, max-age=300" },
  });
}
