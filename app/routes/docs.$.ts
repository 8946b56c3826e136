import type { Route } from "./+types/docs.$";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { docIndexPage, docPage, readDoc } from "../../server/site/docs.ts";

/**
 * `/docs` lists the docs of the code this server runs; `/docs/<name>` renders one with its
 * table of contents, and `/docs/<name>.md` is its Markdown, for agents.
 */
export function loader({ request, params, context }: Route.LoaderArgs) {
  const origin = publicBaseUrl(request, context.services.config);
  const wanted = (params["*"] ?? "").replace(/\/$/, "");
  const html = (body: string, status = 200) =>
    new Response(body, { status, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "public, max-age=300" } });
  if (wanted === "") return html(docIndexPage(origin));
  const twin = wanted.endsWith(".md");
  const doc = readDoc(twin ? wanted.slice(0, -3) : wanted);
  if (!doc) {
    return new Response(`No doc ${wanted} here. The list is at ${origin}/docs.\n`, { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
  }
  if (twin) return new Response(doc.markdown, { headers: { "content-type": "text/markdown; charset=utf-8", "cache-control": "public, max-age=300" } });
  return html(docPage(origin, doc));
}
