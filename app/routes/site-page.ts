import type { Route } from "./+types/site-page";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { renderOwnMarkdown } from "../../server/site/docs.ts";
import { sitePage } from "../../server/site/page.ts";
import { publicPage } from "../../server/site/registry.ts";

/** The public pages (`/product`, `/wire`, `/guides/…`, …) and their `.md` twins (server/site/registry.ts). */
export function loader({ request, context }: Route.LoaderArgs) {
  const { config } = context.services;
  const origin = publicBaseUrl(request, config);
  const pathname = new URL(request.url).pathname.replace(/(.)\/$/, "$1");
  const twin = pathname.endsWith(".md");
  const page = publicPage(twin ? pathname.slice(0, -3) : pathname, config, origin);
  if (!page) {
    return new Response(`Nothing at ${pathname} here. The pages are listed at ${origin}/llms.txt.\n`, { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
  }
  const headers = (type: string) => ({ "content-type": `${type}; charset=utf-8`, "cache-control": "public, max-age=300" });
  if (twin) return new Response(page.markdown, { headers: headers("text/markdown") });
  const body = sitePage({ origin, path: page.path, title: page.title, description: page.description, body: renderOwnMarkdown(page.markdown).html, markdownPath: `${page.path}.md` });
  return new Response(body, { headers: headers("text/html") });
}
