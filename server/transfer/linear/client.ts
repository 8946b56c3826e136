import type { LinearClient, RatelimitedLinearError } from "@linear/sdk";
import type { Config } from "../../config/index.ts";
import { DomainError, invalidInput } from "../../errors.ts";
import { onFirstUse } from "../../on-first-use.ts";
import { downloadFile, type FetchFile } from "../pipeline/files.ts";

/**
 * Linear through its SDK, with explicit queries (`client.client.rawRequest`): the SDK's models
 * fetch every nested connection lazily, a request per issue per connection (decision 025).
 * The key lives in this object only, for one run; nothing here logs or stores it.
 */
export interface LinearApi {
  request<T>(query: string, variables?: Record<string, unknown>): Promise<T>;
  /** Where Linear serves uploaded files: an attachment there is a file. */
  uploads: string;
  /** A file from Linear's uploads host, with the key as Authorization (as Linear asks), through the outbound guard; nothing elsewhere. */
  fetchFile: FetchFile;
}

export interface Backoff {
  /** Waits (tests pass a shorter clock); the default is a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Tries per request before the rate limit fails the run. */
  tries?: number;
}

const linearSdk = onFirstUse(() => import("@linear/sdk"));

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** The longest single wait: a reset an hour away is waited out in steps the caller can show. */
const MAX_WAIT_MS = 60_000;

export function linearApi(config: Pick<Config, "LINEAR_API_URL" | "LINEAR_UPLOADS_URL" | "outboundAllowHosts">, apiKey: string, backoff: Backoff = {}): LinearApi {
  let client: LinearClient | undefined;
  const sleep = backoff.sleep ?? sleepFor;
  const tries = backoff.tries ?? 8;
  const uploads = new URL(config.LINEAR_UPLOADS_URL).origin;
  return {
    uploads,
    fetchFile: (attachment) => downloadFile(config, attachment.url, uploads, { authorization: apiKey }),
    async request<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
      const sdk = await linearSdk.load();
      client ??= new sdk.LinearClient({ apiKey, apiUrl: config.LINEAR_API_URL });
      for (let attempt = 1; ; attempt++) {
        try {
          const response = await client.client.rawRequest<T, Record<string, unknown>>(query, variables);
          await waitForBudget(response.headers, sleep);
          return response.data as T;
        } catch (error) {
          if (error instanceof sdk.RatelimitedLinearError && attempt < tries) {
            await sleep(rateLimitWait(error, attempt));
            continue;
          }
          throw linearRefusal(error);
        }
      }
    },
  };
}

/** How long a RATELIMITED answer asks us to wait: Retry-After, else the reset it names, else exponential. */
export function rateLimitWait(error: RatelimitedLinearError, attempt: number): number {
  if (error.retryAfter !== undefined) return Math.min(error.retryAfter * 1000, MAX_WAIT_MS);
  const reset = error.complexityResetAt ?? error.requestsResetAt;
  if (reset !== undefined) return Math.min(Math.max(reset - Date.now(), 100), MAX_WAIT_MS);
  return Math.min(500 * 2 ** (attempt - 1), MAX_WAIT_MS);
}

/** A spent budget (no requests or complexity left) is waited out before the next request, not hit. */
async function waitForBudget(headers: Headers | undefined, sleep: (ms: number) => Promise<void>): Promise<void> {
  if (!headers) return;
  const num = (name: string) => {
    const v = headers.get(name);
    return v === null || v === "" ? undefined : Number(v);
  };
  const spent = [
    [num("x-ratelimit-requests-remaining"), num("x-ratelimit-requests-reset")],
    [num("x-ratelimit-complexity-remaining"), num("x-ratelimit-complexity-reset")],
  ].find(([remaining]) => remaining !== undefined && remaining <= 0);
  if (spent?.[1] !== undefined) await sleep(Math.min(Math.max(spent[1] - Date.now(), 0), MAX_WAIT_MS));
}

/** Linear's refusals as our coded errors; the message never carries the key (the SDK's never does). */
export function linearRefusal(error: unknown): DomainError {
  if (error instanceof DomainError) return error;
  // An error of the SDK's can only come once the SDK is loaded.
  const sdk = linearSdk.loaded;
  if (sdk && error instanceof sdk.LinearError) {
    const { LinearErrorType } = sdk;
    if (error.type === LinearErrorType.AuthenticationError || error.type === LinearErrorType.Forbidden) {
      return new DomainError("UNAUTHORIZED", "Linear refused the API key", "Paste a personal API key from Linear's Settings → Security & access.");
    }
    if (error.type === LinearErrorType.Ratelimited) {
      return new DomainError("RATE_LIMITED", "Linear's rate limit held through every retry", "Start the import again later; it reconciles in place.");
    }
    if (error.type === LinearErrorType.InvalidInput || error.type === LinearErrorType.GraphqlError) {
      return invalidInput(`Linear refused the request: ${error.message.slice(0, 200)}`, "Check the team; `listLinearTeams` names the ones the key sees.");
    }
  }
  return new DomainError("UNAVAILABLE", "Linear could not be reached", "Check LINEAR_API_URL and try again.");
}
