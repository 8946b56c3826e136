import { CliError } from "./errors.js";
import { readConfig } from "./store.js";

export const DEFAULT_URL = "http://localhost:3000";
export const CLI_CLIENT_ID = "retasc-cli";

/** @param {string} value */
export function normalizeUrl(value) {
  let url;
  try {
    url = new URL(value);
  } catch {
    throw new CliError("INVALID_INPUT", `${value} is not a URL`, "Pass the deployment's base URL, like https://retasc.example.com.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CliError("INVALID_INPUT", `${value} is not an http(s) URL`, "Pass the deployment's base URL.");
  }
  return url.origin + url.pathname.replace(/\/+$/, "");
}

/**
 * The deployment to talk to: --url, then RETASC_DEPLOYMENT_URL, then the last one signed
 * in to, then http://localhost:3000.
 * @param {{ url?: string }} flags
 */
export function deploymentUrl(flags = {}) {
  const value = flags.url || process.env.RETASC_DEPLOYMENT_URL || readConfig().defaultUrl || DEFAULT_URL;
  return normalizeUrl(value);
}

/**
 * Calls the deployment and returns its JSON. Server refusals become CliErrors with the
 * server's code, message and hint.
 * @param {string} baseUrl
 * @param {string} path
 * @param {{ method?: string, token?: string, body?: unknown, query?: Record<string, string | undefined> }} [options]
 */
export async function request(baseUrl, path, options = {}) {
  const url = new URL(baseUrl + path);
  for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(name, value);
  /** @type {Record<string, string>} */
  const headers = { accept: "application/json" };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {
      method: options.method ?? (options.body === undefined ? "GET" : "POST"),
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw new CliError(
      "UNAVAILABLE",
      `cannot reach ${baseUrl} (${/** @type {Error} */ (error).cause?.code ?? /** @type {Error} */ (error).message})`,
      "Is the server running? Pass --url or set RETASC_DEPLOYMENT_URL.",
    );
  }
  const text = await response.text();
  /** @type {any} */
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    const error = body?.error;
    if (error && typeof error === "object" && error.code) {
      throw new CliError(error.code, error.message, error.hint, error.details);
    }
    throw new CliError("UNAVAILABLE", `${url.pathname} answered ${response.status}`, "Check the URL points at a Retasc server.");
  }
  if (body === null) throw new CliError("UNAVAILABLE", `${url.pathname} did not answer JSON`, "Check the URL points at a Retasc server.");
  return body;
}
