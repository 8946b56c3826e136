import type { HttpException, Version3Client } from "jira.js";
import type { Config } from "../../config/index.ts";
import { onFirstUse } from "../../on-first-use.ts";
import { DomainError, invalidInput } from "../../errors.ts";
import { outboundNodeAgents, outboundRefusalOf, requireOutboundUrl } from "../../outbound/address.ts";
import { downloadFile, type FetchFile } from "../pipeline/files.ts";
import type { ReadNotice } from "../pipeline/stream.ts";

/**
 * Jira through jira.js, for one run: Cloud (REST v3, the account's email and an API token as
 * Basic auth) or Data Center (REST v2, a personal access token as a Bearer), told apart by the
 * site's own `/rest/api/2/serverInfo` (decision 074). The site URL is what a person typed: it is
 * checked by the outbound guard (https, public addresses after DNS, at every connection; redirects
 * are not followed) unless the operator allowed its host. The credentials live in this object
 * only; no error made here carries them (jira.js's errors hold the request's headers, so they are
 * never passed on or logged).
 */
export interface JiraCredentials {
  site: string;
  /** Cloud only: the Atlassian account's email. */
  email?: string;
  /** Cloud: an API token; Data Center: a personal access token. */
  apiToken: string;
}

export type JiraDeployment = "cloud" | "dataCenter";

export interface JiraBackoff {
  /** Waits (tests pass a shorter clock); the default is a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Tries per request before a 429 or a 5xx fails the run. */
  tries?: number;
}

export interface JiraApi {
  /** The site's origin, as ids are namespaced with it. */
  site: string;
  deployment: JiraDeployment;
  call<T>(request: (client: Version3Client) => Promise<T>, notice?: ReadNotice): Promise<T>;
  /** A GET of any path of the site's REST API (Data Center's v2), with the same retries, waits and refusals. */
  get<T>(url: string, params?: Record<string, string | number | string[]>, notice?: ReadNotice): Promise<T>;
  /** An attachment's content from the site itself, with the credentials, through the outbound guard; nothing elsewhere. */
  fetchFile: FetchFile;
}

const jiraJs = onFirstUse(() => import("jira.js"));
/** Whether an error is jira.js's answer from the site (it carries the HTTP status). */
const isHttpException = (error: unknown): error is HttpException => jiraJs.loaded !== undefined && error instanceof jiraJs.loaded.HttpException;

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
  const email = credentials.email?.trim() || undefined;
  const { Version3Client } = await jiraJs.load();
  const clientOf = (authentication: { basic: { email: string; apiToken: string } } | undefined, headers: Record<string, string> = {}) =>
    new Version3Client({ host: site, ...(authentication ? { authentication } : {}), baseRequestConfig: { ...outboundNodeAgents(config, site), maxRedirects: 0, timeout: 60_000, proxy: false, headers } });
  const deployment = await jiraDeployment(retrying(clientOf(undefined), backoff, "cloud"), email);
  if (deployment === "cloud" && !email) throw invalidInput("email: Jira Cloud takes the Atlassian account's email with an API token", "Enter the email you sign in to Jira with; a Data Center site takes a personal access token alone.");
  const authorization = deployment === "cloud" ? `Basic ${Buffer.from(`${email}:${credentials.apiToken}`).toString("base64")}` : `Bearer ${credentials.apiToken}`;
  const client = deployment === "cloud" ? clientOf({ basic: { email: email!, apiToken: credentials.apiToken } }) : clientOf(undefined, { authorization });
  const call = retrying(client, backoff, deployment);
  return {
    site,
    deployment,
    fetchFile(attachment) {
      // Jira answers the content url with a redirect to its media host unless asked not to; the credentials never follow one.
      const url = URL.canParse(attachment.url) ? new URL(attachment.url) : null;
      url?.searchParams.set("redirect", "false");
      return downloadFile(config, url?.href ?? "", site, { authorization });
    },
    call,
    get: (url, params, notice) => call((c) => c.sendRequest({ url, method: "GET", params }, undefined as never), notice),
  };
}

/**
 * Cloud or Data Center, by the site's own answer (`deploymentType`: Cloud, or Server and
 * DataCenter), asked without credentials. A site that does not say is taken at the person's
 * word: an email means Cloud, a token alone Data Center.
 */
async function jiraDeployment(call: JiraApi["call"], email: string | undefined): Promise<JiraDeployment> {
  try {
    const info = await call((c) => c.sendRequest<{ deploymentType?: string }>({ url: "/rest/api/2/serverInfo", method: "GET" }, undefined as never));
    if (info.deploymentType === "Cloud") return "cloud";
    if (info.deploymentType === "Server" || info.deploymentType === "DataCenter") return "dataCenter";
  } catch (error) {
    if (!(error instanceof DomainError) || !["UNAUTHORIZED", "NOT_FOUND", "INVALID_INPUT"].includes(error.code) || error.message.startsWith("site:")) throw error;
  }
  return email ? "cloud" : "dataCenter";
}

/** Requests through a client, a 429 waited out by Retry-After and shown, a 5xx or a dropped connection retried; refusals coded. */
function retrying(client: Version3Client, backoff: JiraBackoff, deployment: JiraDeployment): JiraApi["call"] {
  const sleep = backoff.sleep ?? sleepFor;
  const tries = backoff.tries ?? 6;
  return async <T>(request: (client: Version3Client) => Promise<T>, notice?: ReadNotice): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await request(client);
      } catch (error) {
        const status = isHttpException(error) ? error.status : null;
        const retryable = status === 429 || (status !== null && status >= 500) || (status === null && !outboundRefusalOf(error) && isNetworkError(error));
        if (!retryable || attempt >= tries) throw jiraRefusal(error, deployment);
        const wait = status === 429 ? retryAfterMs(error as HttpException, attempt) : Math.min(250 * 2 ** (attempt - 1), MAX_WAIT_MS);
        if (status === 429) await notice?.waiting(wait);
        await sleep(wait);
      }
    }
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
export function jiraRefusal(error: unknown, deployment: JiraDeployment = "cloud"): DomainError {
  if (error instanceof DomainError) return error;
  const refused = outboundRefusalOf(error);
  if (refused) return invalidInput(`site: ${refused.message}`, "Use your Jira site's https URL (https://your-team.atlassian.net).");
  const status = isHttpException(error) ? error.status : null;
  if (status === 401 && deployment === "dataCenter") return new DomainError("UNAUTHORIZED", "Jira refused the personal access token", "Make a personal access token in Jira: your profile → Personal Access Tokens (the account must see the project).");
  if (status === 401) return new DomainError("UNAUTHORIZED", "Jira refused the email and API token", "Use the email of your Atlassian account and an API token from id.atlassian.com → Security → API tokens.");
  if (status === 403) return new DomainError("UNAUTHORIZED", "Jira refused this account access", "The account needs Browse projects permission on the project.");
  if (status === 404) return new DomainError("NOT_FOUND", "Jira has no such project or site path", "Check the site URL and the project key; listing the projects shows the ones this account sees.");
  if (status === 429) return new DomainError("RATE_LIMITED", "Jira's rate limit held through every retry", "Start the import again later; it reconciles in place.");
  if (status !== null && status >= 300 && status < 400) return invalidInput("site: the Jira site answered with a redirect", "Enter the site's final https URL (https://your-team.atlassian.net).");
  if (status === 400) return invalidInput("Jira refused the request", "Check the project key.");
  return new DomainError("UNAVAILABLE", "Jira could not be reached", "Check the site URL and try again.");
}
