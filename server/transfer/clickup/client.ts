import type { Config } from "../../config/index.ts";
import { downloadFile, type FetchFile } from "../pipeline/files.ts";
import { restApi, tokenRefusal, type RestApi, type RestBackoff } from "../pipeline/rest.ts";

/**
 * ClickUp's REST API v2 (CLICKUP_API_URL, https://api.clickup.com/api/v2) with a personal API
 * token (`pk_…`) as the whole `Authorization` header, for one run. The token lives in this
 * object only.
 */
export interface ClickUpApi extends RestApi {
  /** Whether a url is on ClickUp's own hosts, where it stores uploaded files. */
  onClickUp(url: string): boolean;
  /** An uploaded file from ClickUp's own hosts, with the token, through the outbound guard; nothing elsewhere. */
  fetchFile: FetchFile;
}

const refusal = tokenRefusal("ClickUp", {
  token: "Paste a personal API token (pk_…) from ClickUp's Settings → Apps → API Token (the account must see the List or Space).",
  notFound: "Check the List or Space id; listing the Workspace's Spaces and Lists shows the ones the token sees.",
});

/**
 * ClickUp's own hosts for uploads: the API's origin, and on clickup.com its attachment hosts
 * (`attachments.clickup.com`, `t<workspace>.p.clickup-attachments.com`), all https.
 */
export function clickupFileHost(apiUrl: string, url: string): boolean {
  if (!URL.canParse(url)) return false;
  const file = new URL(url);
  if (file.origin === new URL(apiUrl).origin) return true;
  return file.protocol === "https:" && !file.port && (file.hostname === "attachments.clickup.com" || file.hostname.endsWith(".clickup-attachments.com"));
}

export function clickupApi(config: Pick<Config, "CLICKUP_API_URL" | "outboundAllowHosts">, apiToken: string, backoff?: RestBackoff): ClickUpApi {
  const rest = restApi({ base: config.CLICKUP_API_URL, headers: { authorization: apiToken }, refusal, backoff });
  const onClickUp = (url: string) => clickupFileHost(config.CLICKUP_API_URL, url);
  return {
    ...rest,
    onClickUp,
    async fetchFile(attachment) {
      if (!onClickUp(attachment.url)) return { keptAsLink: "failed" };
      return downloadFile(config, attachment.url, new URL(attachment.url).origin, { authorization: apiToken });
    },
  };
}
