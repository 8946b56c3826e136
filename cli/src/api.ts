import { CliError } from "./errors.ts";
import { findProjectFile } from "./folder.ts";
import { readConfig } from "./store.ts";
import type { ServerCli } from "./wire.ts";

export const DEFAULT_URL = "http://localhost:3000";
export const CLI_CLIENT_ID = "retasc-cli";

/** The flag every command that talks to a deployment takes. */
export interface UrlFlag {
  url?: string;
}

export function normalizeUrl(value: string): string {
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
 * The deployment to talk to: --url, then RETASC_DEPLOYMENT_URL, then the one this folder's
 * `.retasc.json` names (unless `folder` is false: where a key you give goes is never the
 * folder's to say), then the last one signed in to or bound with, then http://localhost:3000.
 * Sessions are kept per deployment, so a folder naming another one reaches it with none.
 */
export function deploymentUrl(flags: UrlFlag = {}, { folder = true } = {}): string {
  const named = folder ? findProjectFile(process.cwd())?.value.url : undefined;
  const value = flags.url || process.env.RETASC_DEPLOYMENT_URL || named || readConfig().defaultUrl || DEFAULT_URL;
  return normalizeUrl(value);
}

/** The folder's `.retasc.json` when it is what chose the deployment (no --url, no RETASC_DEPLOYMENT_URL), else null. */
export function deploymentFromFolder(flags: UrlFlag = {}): string | null {
  if (flags.url || process.env.RETASC_DEPLOYMENT_URL) return null;
  return findProjectFile(process.cwd())?.file ?? null;
}

export interface RequestOptions {
  method?: string;
  token?: string;
  body?: unknown;
  query?: Record<string, string | undefined>;
}

/** How the server refuses: `{ error: { code, message, hint, details } }` (server/errors.ts). */
interface ErrorBody {
  error?: { code?: string; message: string; hint?: string; details?: Record<string, unknown> };
}

/**
 * Calls the deployment and returns its JSON, as the endpoint's reply type `T`. Server
 * refusals become CliErrors with the server's code, message and hint.
 */
export async function request<T>(baseUrl: string, path: string, options: RequestOptions = {}): Promise<T> {
  const url = new URL(baseUrl + path);
  for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(name, value);
  const headers: Record<string, string> = { accept: "application/json" };
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
    const e = error as Error & { cause?: { code?: string } };
    throw new CliError("UNAVAILABLE", `cannot reach ${baseUrl} (${e.cause?.code ?? e.message})`, "Is the server running? Pass --url or set RETASC_DEPLOYMENT_URL.");
  }
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) throw refusal(url.pathname, response.status, body);
  if (body === null) throw new CliError("UNAVAILABLE", `${url.pathname} did not answer JSON`, "Check the URL points at a Retasc server.");
  return body as T;
}

/** A refusal as a CliError: the server's code, message and hint, or the bare status. */
export function refusal(pathname: string, status: number, body: unknown): CliError {
  const error = (body as ErrorBody | null)?.error;
  if (error && typeof error === "object" && error.code) return new CliError(error.code, error.message, error.hint, error.details);
  return new CliError("UNAVAILABLE", `${pathname} answered ${status}`, "Check the URL points at a Retasc server.");
}

/** The CLI the server serves at /cli/latest, or null when it serves none. */
export async function serverCli(url: string): Promise<ServerCli | null> {
  return request<ServerCli>(url, "/cli/latest.json").catch(() => null);
}
