import type { Route } from "./+types/site-page";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { renderOwnMarkdown } from "../../server/site/docs.ts";
import { sitePage } from "../../server/site/page.ts";
import { pricingPage, wirePage } from "../../server/site/pages.ts";

/** `/wire` and `/pricing`, and their `.md` twins: written from this server's configuration. */
export function loader({ request, context }: Route.LoaderArgs) {
  const { config } = context.services;
  const origin = publicBaseUrl(request, config);
  const pathname = new URL(request.url).pathname;
  const twin = pathname.endsWith(".md");
  const path = twin ? pathname.slice(0, -3) : pathname;
  const page = path === "/wire" ? wirePage(origin) : pricingPage(config);
  const headers = (type: string) => ({ "content-type": `${type}; charset=utf-8`, "cache-control": "public, max-age=300" });
  if (twin) return new Response(page.markdown, { headers: headers("text/markdown") });
  const body = sitePage({ origin, path: page.path, title: page.title, description: page.description, body: renderOwnMarkdown(page.markdown).html, markdownPath: `${page.path}.md` });
  return new Response(body, { headers: headers("text/html") });
}
