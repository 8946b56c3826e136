import { z } from "zod";
import { describeZodError, DomainError, httpStatusOf, inputErrorOf, type ErrorCode } from "../server/errors.ts";
import type { Logger } from "../server/log.ts";

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  hint: string;
  details?: Record<string, unknown>;
  /** A sentence for the person (who can buy credit, and where): shown and relayed verbatim. */
  tellHuman?: string;
}

/**
 * Translates what a server/ function threw into what a person or the CLI sees: domain
 * errors keep their code and hint, bad input names the problem, anything else is logged
 * and reported without its message or stack.
 */
export function toErrorBody(error: unknown, log: Logger): { status: number; body: ErrorBody } {
  if (error instanceof DomainError) {
    const body: ErrorBody = { code: error.code, message: error.message, hint: error.hint };
    if (error.details) body.details = error.details;
    if (error.tellHuman) body.tellHuman = error.tellHuman;
    return { status: httpStatusOf[error.code], body };
  }
  if (error instanceof z.ZodError) {
    return {
      status: 400,
      body: { code: "INVALID_INPUT", message: describeZodError(error), hint: "Fix the input and try again." },
    };
  }
  const input = inputErrorOf(error);
  if (input) return toErrorBody(input, log);
  log.error({ err: error }, "unexpected error");
  return {
    status: 500,
    body: { code: "UNAVAILABLE", message: "something went wrong on the server", hint: "Try again; if it persists, check the server log." },
  };
}

/** Runs a Dash action's server call; a refusal becomes `{ error }` for the page to show. */
export async function attempt<T>(
  log: Logger,
  run: () => Promise<T>,
): Promise<{ ok: true; value: T; error?: undefined } | { ok: false; error: ErrorBody; value?: undefined }> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error: toErrorBody(error, log).body };
  }
}
