import { HttpException, Version3Client } from "jira.js";
import type { Config } from "../../config/index.ts";
import { DomainError, invalidInput } from "../../errors.ts";
import { outboundNodeAgents, outboundRefusalOf, requireOutboundUrl } from "../../outbound/address.ts";
import { downloadFile, type FetchFile } from "../pipeline/files.ts";
import type { ReadNotice } from "../pipeline/stream.ts";

/**
 * Jira Cloud's REST v3 through jira.js, for one run. The site URL is what a person typed: it is
 * checked by the outbound guard (https, public addresses after DNS, at every connection; redirects
 * are not followed) unless the operator allowed its host. The email and API token live in this
 * object only; no error made here carries them (jira.js's errors hold the request's headers, so
 * they are never passed on or logged).
 */
export interface JiraCredentials {
  site: string;
  email: string;
  apiToken: string;
}

export interface JiraBackoff {
  /** Waits (tests pass a shorter clock); the default is a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Tries per request before a 429 or a 5xx fails the run. */
  tries?: number;
}

export interface JiraApi {
  /** The site's origin, as ids are namespaced with it. */
  site: string;
  call<T>(request: (client: Version3Client) => Promise<T>, notice?: ReadNotice): Promise<T>;
  /** An attachment's content from the site itself, with the credentials, through the outbound guard; nothing elsewhere. */
  fetchFile: FetchFile;
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** The longest single wait: a longer Retry-After is waited out in steps the run shows. */
const MAX_WAIT_MS = 60_000;

/** The site URL as its origin, checked by the outbound guard (INVALID_INPUT naming `site`). */
export async function jiraSite(config: Pick<Config, "outboundAllowHosts">, raw: string): Promise<string> {
  await requireOutboundUrl(config, raw, "site");
  return new URL(raw).origin;
}

export async function jiraApi(config: Pick<Config, "outboundAllowHosts">, credentials: JiraCredentials, backoff: JiraBackoff = {}): Promise<JiraApi> {
  const site = await jiraSite(config, credentials.site);
  const client = new Version3Client({
    host: site,
    authentication: { basic: { email: credentials.email, apiToken: credentials.apiToken } },
    baseRequestConfig: { ...outboundNodeAgents(config, site), maxRedirects: 0, timeout: 60_000, proxy: false },
  });
  const sleep = backoff.sleep ?? sleepFor;
  const tries = backoff.tries ?? 6;
  const basic = `Basic ${Buffer.from(`${credentials.email}:${credentials.apiToken}`).toString("base64")}`;
  return {
    site,
    fetchFile(attachment) {
      // Jira answers the content url with a redirect to its media host unless asked not to; the credentials never follow one.
      const url = URL.canParse(attachment.url) ? new URL(attachment.url) : null;
      url?.searchParams.set("redirect", "false");
      return downloadFile(config, url?.href ?? "", site, { authorization: basic });
    },
    async call<T>(request: (client: Version3Client) => Promise<T>, notice?: ReadNotice): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        try {
          return await request(client);
        } catch (error) {
          const status = error instanceof HttpException ? error.status : null;
          const retryable = status === 429 || (status !== null && status >= 500) || (status === null && !outboundRefusalOf(error) && isNetworkError(error));
          if (!retryable || attempt >= tries) throw jiraRefusal(error);
          const wait = status === 429 ? retryAfterMs(error as HttpException, attempt) : Math.min(250 * 2 ** (attempt - 1), MAX_WAIT_MS);
          if (status === 429) await notice?.waiting(wait);
          await sleep(wait);
        }
      }
    },
  };
}

/** Retry-After in seconds (Jira sends seconds), else exponential. */
function retryAfterMs(error: HttpException, attempt: number): number {
  const headers = (error.cause as { response?: { headers?: Record<string, unknown> } } | undefined)?.response?.headers;
  const seconds = Number(headers?.["retry-after"]);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, MAX_WAIT_MS);
  return Math.min(1000 * 2 ** (attempt - 1), MAX_WAIT_MS);
}

function isNetworkError(error: unknown): boolean {
  const code = (error as { code?: string; cause?: { code?: string } }).code ?? (error as { cause?: { code?: string } }).cause?.code;
  return typeof code === "string" && ["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "ECONNABORTED", "EPIPE", "EAI_AGAIN"].includes(code);
}

/** Jira's refusals as our coded errors, each saying what to fix; never the credentials or the response body. */
export function jiraRefusal(error: unknown): DomainError {
  if (error instanceof DomainError) return error;
  const refused = outboundRefusalOf(error);
  if (refused) return invalidInput(`site: ${refused.message}`, "Use your Jira site's https URL (https://your-team.atlassian.net).");
  const status = error instanceof HttpException ? error.status : null;
  if (status === 401) return new DomainError("UNAUTHORIZED", "Jira refused the email and API token", "Use the email of your Atlassian account and an API token from id.atlassian.com → Security → API tokens.");
  if (status === 403) return new DomainError("UNAUTHORIZED", "Jira refused this account access", "The account needs Browse projects permission on the project.");
  if (status === 404) return new DomainError("NOT_FOUND", "Jira has no such project or site path", "Check the site URL and the project key; listing the projects shows the ones this account sees.");
  if (status === 429) return new DomainError("RATE_LIMITED", "Jira's rate limit held through every retry", "Start the import again later; it reconciles in place.");
  if (status !== null && status >= 300 && status < 400) return invalidInput("site: the Jira site answered with a redirect", "Enter the site's final https URL (https://your-team.atlassian.net).");
  if (status === 400) return invalidInput("Jira refused the request", "Check the project key.");
  return new DomainError("UNAVAILABLE", "Jira could not be reached", "Check the site URL and try again.");
}
