import { DomainError } from "../../errors.ts";
import { undici } from "../../outbound/address.ts";
import type { ReadNotice } from "./stream.ts";

/**
 * A JSON REST API read with a credential for one run (Asana, Shortcut, ClickUp): GET only, the base URL
 * the operator's (an env var, like LINEAR_API_URL: not outside input, so not the outbound guard's),
 * redirects never followed (the credential goes to the base's origin only). A 429 is waited out
 * by its Retry-After (at most 60 s a time, shown on the run), a 5xx or a dropped connection
 * retried with backoff, up to `tries` tries a request; any other refusal becomes the source's
 * coded error, which never carries the credential or the answer's body.
 */
export interface RestBackoff {
  /** Waits (tests pass a shorter clock); the default is a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Tries per request before a 429 or a 5xx fails the run. */
  tries?: number;
}

export interface RestApi {
  /** The base URL, without a trailing slash. */
  base: string;
  get<T>(path: string, query?: Record<string, string | number | undefined>, notice?: ReadNotice): Promise<T>;
}

/** What the source's refusal means, by HTTP status (null: no answer at all). */
export type Refusal = (status: number | null) => DomainError;

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const MAX_WAIT_MS = 60_000;
const REQUEST_MS = 60_000;

export function restApi(options: { base: string; headers: Record<string, string>; refusal: Refusal; backoff?: RestBackoff }): RestApi {
  const base = options.base.replace(/\/+$/, "");
  const sleep = options.backoff?.sleep ?? sleepFor;
  const tries = options.backoff?.tries ?? 6;
  return {
    base,
    async get<T>(path: string, query: Record<string, string | number | undefined> = {}, notice?: ReadNotice): Promise<T> {
      const url = new URL(`${base}${path}`);
      for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
      for (let attempt = 1; ; attempt++) {
        let status: number | null = null;
        let wait = Math.min(250 * 2 ** (attempt - 1), MAX_WAIT_MS);
        try {
          const res = await undici().fetch(url, { headers: { accept: "application/json", ...options.headers }, redirect: "manual", signal: AbortSignal.timeout(REQUEST_MS) });
          status = res.status;
          if (status === 200) return (await res.json()) as T;
          await res.body?.cancel();
          if (status === 429) wait = retryAfterMs(res.headers.get("retry-after"), attempt, res.headers.get("x-ratelimit-reset"));
        } catch (error) {
          if (status !== null) throw options.refusal(status);
          if (!isNetworkError(error)) throw options.refusal(null);
        }
        const retryable = status === null || status === 429 || status >= 500;
        if (!retryable || attempt >= tries) throw options.refusal(status);
        if (status === 429) await notice?.waiting(wait);
        await sleep(wait);
      }
    },
  };
}

/**
 * Retry-After as seconds or an HTTP date, else X-RateLimit-Reset (the Unix second the window
 * reopens: ClickUp sends only this), else exponential; at most a minute a time.
 */
export function retryAfterMs(header: string | null, attempt: number, resetAt: string | null = null): number {
  const seconds = Number(header);
  if (header !== null && header.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, MAX_WAIT_MS);
  const date = header ? Date.parse(header) : NaN;
  if (Number.isFinite(date)) return Math.min(Math.max(date - Date.now(), 0), MAX_WAIT_MS);
  const reset = resetAt !== null && /^\d+$/.test(resetAt.trim()) ? Number(resetAt) * 1000 : NaN;
  if (Number.isFinite(reset)) return Math.min(Math.max(reset - Date.now(), 0), MAX_WAIT_MS);
  return Math.min(1000 * 2 ** (attempt - 1), MAX_WAIT_MS);
}

function isNetworkError(error: unknown): boolean {
  const e = error as { name?: string; code?: string; cause?: { code?: string } };
  if (e.name === "TimeoutError" || e.name === "AbortError") return true;
  const code = e.code ?? e.cause?.code;
  return typeof code === "string" && ["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "ECONNABORTED", "EPIPE", "EAI_AGAIN", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT"].includes(code);
}

/** The usual refusals of a token API, each saying what to fix; `what` names the source. */
export function tokenRefusal(what: string, fix: { token: string; notFound: string }): Refusal {
  return (status) => {
    if (status === 401) return new DomainError("UNAUTHORIZED", `${what} refused the token`, fix.token);
    if (status === 403) return new DomainError("UNAUTHORIZED", `${what} refused this account access`, fix.token);
    if (status === 404) return new DomainError("NOT_FOUND", `${what} has no such item, or the token cannot see it`, fix.notFound);
    if (status === 429) return new DomainError("RATE_LIMITED", `${what}'s rate limit held through every retry`, "Start the import again later; it reconciles in place.");
    if (status !== null && status >= 300 && status < 400) return new DomainError("UNAVAILABLE", `${what} answered with a redirect`, `Check the ${what} API URL the server is configured with.`);
    if (status === 400) return new DomainError("INVALID_INPUT", `${what} refused the request`, fix.notFound);
    return new DomainError("UNAVAILABLE", `${what} could not be reached`, "Try again; a re-import reconciles in place.");
  };
}
