import type { Config } from "../config/index.ts";
import { writtenPage, writtenPaths } from "./content.ts";
import { pricingPage, wirePage, type PublicPage } from "./pages.ts";
import { connectorsPage, operatorPage, operatorPagePaths } from "./server-pages.ts";

/**
 * Every public page this server serves at its own path (each with a `.md` twin), in the order the
 * listings give them: the pages built from configuration, then the written ones, then the
 * operator's. One list for the route, `/index.md`, `/llms.txt` and the API catalog.
 */
export function publicPage(pagePath: string, config: Config, origin: string): PublicPage | null {
  if (pagePath === "/wire") return wirePage(origin);
  if (pagePath === "/pricing") return pricingPage(config);
  if (pagePath === "/connectors") return connectorsPage(config, origin);
  return operatorPage(pagePath, config) ?? writtenPage(pagePath, origin);
}

export function publicPagePaths(config: Pick<Config, "RETASC_TERMS_FILE" | "RETASC_PRIVACY_FILE">): string[] {
  const written = writtenPaths();
  const top = written.filter((p) => !p.startsWith("/guides/"));
  return [...top.filter((p) => p !== "/guides"), "/wire", "/pricing", "/connectors", "/guides", ...written.filter((p) => p.startsWith("/guides/")), ...operatorPagePaths(config)];
}
