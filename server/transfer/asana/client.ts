import type { Config } from "../../config/index.ts";
import { downloadFile, type FetchFile } from "../pipeline/files.ts";
import { restApi, tokenRefusal, type RestApi, type RestBackoff } from "../pipeline/rest.ts";
import type { ReadNotice } from "../pipeline/stream.ts";

/**
 * Asana's REST API (ASANA_API_URL, https://app.asana.com/api/1.0) with a personal access token
 * as a Bearer, for one run. Every answer is `{data}`; lists come in pages of `limit` with
 * `next_page.offset` naming the next. The token lives in this object only.
 */
export interface AsanaApi extends RestApi {
  /** One page of a list: its items and the offset of the next page (null on the last). */
  page<T>(path: string, query: Record<string, string | number | undefined>, offset: string | null, notice?: ReadNotice): Promise<{ items: T[]; next: string | null }>;
  /** Every page of a list. */
  all<T>(path: string, query: Record<string, string | number | undefined>, notice?: ReadNotice): Promise<T[]>;
  /** An attachment Asana hosts, by its gid (a fresh signed download url is asked for first); nothing else. */
  fetchFile: FetchFile;
}

export const ASANA_PAGE_LIMIT = 100;

const refusal = tokenRefusal("Asana", {
  token: "Paste a personal access token from Asana's My settings → Apps → Developer apps (the account must see the project).",
  notFound: "Check the project; listing the projects shows the ones the token sees.",
});

export function asanaApi(config: Pick<Config, "ASANA_API_URL" | "outboundAllowHosts">, accessToken: string, backoff?: RestBackoff): AsanaApi {
  const rest = restApi({ base: config.ASANA_API_URL, headers: { authorization: `Bearer ${accessToken}` }, refusal, backoff });
  const page: AsanaApi["page"] = async <T>(path: string, query: Record<string, string | number | undefined>, offset: string | null, notice?: ReadNotice) => {
    const body = await rest.get<{ data: T[]; next_page?: { offset: string } | null }>(path, { ...query, limit: query.limit ?? ASANA_PAGE_LIMIT, offset: offset ?? undefined }, notice);
    return { items: body.data ?? [], next: body.next_page?.offset ?? null };
  };
  return {
    ...rest,
    page,
    async all<T>(path: string, query: Record<string, string | number | undefined>, notice?: ReadNotice) {
      const out: T[] = [];
      for (let offset: string | null = null, first = true; first || offset !== null; first = false) {
        const got: { items: T[]; next: string | null } = await page<T>(path, query, offset, notice);
        out.push(...got.items);
        offset = got.next;
      }
      return out;
    },
    async fetchFile(attachment) {
      // Asana's download_url is signed and lives two minutes: asked for just before the download,
      // which goes to wherever Asana stores the file without the token (it is Asana's own signature).
      const gid = attachment.id.slice(attachment.id.lastIndexOf(":") + 1);
      try {
        const { data } = await rest.get<{ data: { download_url?: string | null } }>(`/attachments/${encodeURIComponent(gid)}`, { opt_fields: "download_url" });
        const url = data.download_url ?? "";
        if (!URL.canParse(url) || !["https:", "http:"].includes(new URL(url).protocol)) return { keptAsLink: "failed" };
        return await downloadFile(config, url, new URL(url).origin, {});
      } catch {
        return { keptAsLink: "failed" };
      }
    },
  };
}
