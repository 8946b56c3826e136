import type { Config } from "../../config/index.ts";
import { downloadFile, type FetchFile } from "../pipeline/files.ts";
import { restApi, tokenRefusal, type RestApi, type RestBackoff } from "../pipeline/rest.ts";

/**
 * Shortcut's REST API v3 (SHORTCUT_API_URL, https://api.app.shortcut.com/api/v3) with an API
 * token in the `Shortcut-Token` header, for one run. The token lives in this object only.
 */
export interface ShortcutApi extends RestApi {
  /** The origins Shortcut serves uploaded files from: the API's own, and its media host (api.x → media.x). */
  fileOrigins: string[];
  /** An uploaded file from Shortcut's own hosts, with the token, through the outbound guard; nothing elsewhere. */
  fetchFile: FetchFile;
}

const refusal = tokenRefusal("Shortcut", {
  token: "Paste an API token from Shortcut's Settings → Your account → API Tokens.",
  notFound: "Check the team; listing the teams shows the ones the token sees.",
});

/** The API's origin and, for an API host named api.<domain>, media.<domain>, where Shortcut serves uploads. */
export function shortcutFileOrigins(apiUrl: string): string[] {
  const api = new URL(apiUrl);
  const origins = [api.origin];
  if (api.hostname.startsWith("api.")) origins.push(`${api.protocol}//media.${api.hostname.slice(4)}${api.port ? `:${api.port}` : ""}`);
  return origins;
}

export function shortcutApi(config: Pick<Config, "SHORTCUT_API_URL" | "outboundAllowHosts">, apiToken: string, backoff?: RestBackoff): ShortcutApi {
  const rest = restApi({ base: config.SHORTCUT_API_URL, headers: { "shortcut-token": apiToken }, refusal, backoff });
  const fileOrigins = shortcutFileOrigins(config.SHORTCUT_API_URL);
  return {
    ...rest,
    fileOrigins,
    async fetchFile(attachment) {
      const origin = URL.canParse(attachment.url) ? new URL(attachment.url).origin : "";
      if (!fileOrigins.includes(origin)) return { keptAsLink: "failed" };
      return downloadFile(config, attachment.url, origin, { "shortcut-token": apiToken });
    },
  };
}
