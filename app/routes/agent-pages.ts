import type { Route } from "./+types/agent-pages";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { authMarkdown, llmsTxt } from "../../server/site/agent-pages.ts";
import { publicPage, publicPagePaths } from "../../server/site/registry.ts";

/** `/llms.txt` and `/auth.md`: this server described for agents, in Markdown. */
export function loader({ request, context }: Route.LoaderArgs) {
  const { config } = context.services;
  const origin = publicBaseUrl(request, config);
  const llms = new URL(request.url).pathname === "/llms.txt";
  const pages = () => publicPagePaths(config).flatMap((path) => publicPage(path, config, origin) ?? []);
  return new Response(llms ? llmsTxt(origin, pages()) : authMarkdown(origin), {
    headers: { "content-type": `${llms ? "text/plain" : "text/markdown"}; charset=utf-8`, "cache-control": "public, max-age=300" },
  });
}
