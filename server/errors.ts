import type { z } from "zod";

/**
 * Coded domain errors. Thrown by server/ functions, translated only at the edges:
 * HTTP status in routes, `isError` tool results in MCP, retry-or-give-up in workers.
 */
export const errorCodes = [
  "NOT_FOUND",
  "ALREADY_CLAIMED",
  "STALE_CLAIM",
  "CLAIM_MISMATCH",
  "BLOCKED",
  "CONTAINER",
  "STATUS_NOT_CLAIMABLE",
  "SELF_REVIEW",
  "CLAIM_CAP",
  "AWAITING_TRIAGE",
  "SESSION_KEY_CAP",
  "FORBIDDEN",
  "UNAUTHORIZED",
  "INVALID_INPUT",
  "CYCLE",
  "CONFLICT",
  "RATE_LIMITED",
  "UNAVAILABLE",
  "BILLING_INACTIVE",
  "SPEND_CAP",
  "EVIDENCE_REQUIRED",
  "CHANGE_TYPE_REQUIRED",
  "DUPLICATE_CHECK_REQUIRED",
  "HANDOFF_REQUIRED",
  "CLAIM_REQUIRED",
  "ORG_FROZEN",
] as const;
export type ErrorCode = (typeof errorCodes)[number];

export class DomainError extends Error {
  constructor(
    public readonly code: ErrorCode,
    message: string,
    public readonly hint: string,
    public readonly details?: Record<string, unknown>,
    public readonly tellHuman?: string,
  ) {
    super(message);
    this.name = "DomainError";
  }

  toJSON() {
    return {
      code: this.code,
      message: this.message,
      hint: this.hint,
      ...(this.details ? { details: this.details } : {}),
      ...(this.tellHuman ? { tellHuman: this.tellHuman } : {}),
    };
  }
}

export const notFound = (what: string, hint = "Check the identifier; you can only see your own org.") =>
  new DomainError("NOT_FOUND", `${what} not found`, hint);

export const invalidInput = (message: string, hint: string) =>
  new DomainError("INVALID_INPUT", message, hint);

export const forbidden = (message: string, hint = "Ask an owner or admin of the org.") =>
  new DomainError("FORBIDDEN", message, hint);

export const httpStatusOf: Record<ErrorCode, number> = {
  NOT_FOUND: 404,
  ALREADY_CLAIMED: 409,
  STALE_CLAIM: 409,
  CLAIM_MISMATCH: 409,
  BLOCKED: 409,
  CONTAINER: 409,
  STATUS_NOT_CLAIMABLE: 409,
  SELF_REVIEW: 409,
  CLAIM_CAP: 429,
  AWAITING_TRIAGE: 409,
  SESSION_KEY_CAP: 429,
  FORBIDDEN: 403,
  UNAUTHORIZED: 401,
  INVALID_INPUT: 400,
  CYCLE: 409,
  CONFLICT: 409,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
  BILLING_INACTIVE: 402,
  SPEND_CAP: 402,
  EVIDENCE_REQUIRED: 400,
  CHANGE_TYPE_REQUIRED: 400,
  DUPLICATE_CHECK_REQUIRED: 409,
  HANDOFF_REQUIRED: 400,
  CLAIM_REQUIRED: 409,
  ORG_FROZEN: 503,
};

/** Describes zod issues the way a caller (agent, person or the CLI) can fix them: `path: problem` per issue. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join(".") : "arguments"}: ${issue.message}`)
    .join("; ");
}

/**
 * PostgreSQL's data exceptions (SQLSTATE class 22: a NUL character in text, a malformed id, a
 * number out of range) are caused by the caller's values, not by the server: the edges report
 * them as INVALID_INPUT instead of an internal failure. Drivers put the code on the error or,
 * wrapped by Drizzle, on its cause.
 */
export function inputErrorOf(error: unknown): DomainError | null {
  const codeOf = (e: unknown) => (e && typeof e === "object" && "code" in e ? String((e as { code: unknown }).code) : "");
  const code = [codeOf(error), codeOf((error as { cause?: unknown } | null)?.cause)].find((c) => /^22[0-9A-Z]{3}$/.test(c));
  if (!code) return null;
  return new DomainError(
    "INVALID_INPUT",
    "a value in the request cannot be stored or compared (a NUL character, a malformed id or an out-of-range number)",
    "Remove control characters, check ids and numbers, and try again.",
  );
}

/** A NUL (PostgreSQL's text cannot hold one) or a UTF-16 surrogate without its pair (not a character; drivers replace it silently). */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The first text in `value` (a string, or any key or string inside arrays and objects, however
 * deep) that no column can store as sent, named by its path (`title`, `labels.2`), or null. Each
 * door calls it once on everything it parsed from the request, before any query runs.
 */
export function unstorableTextIn(value: unknown, path = ""): string | null {
  const stack: [unknown, string][] = [[value, path]];
  while (stack.length > 0) {
    const [v, at] = stack.pop()!;
    if (typeof v === "string") {
      if (UNSTORABLE.test(v)) return at || "the value";
    } else if (v !== null && typeof v === "object") {
      for (const [key, inner] of Object.entries(v)) {
        const here = at ? `${at}.${key}` : key;
        if (UNSTORABLE.test(key)) return here;
        stack.push([inner, here]);
      }
    }
  }
  return null;
}

/** INVALID_INPUT for text no column can store, naming where it was (see unstorableTextIn). */
export const unstorableText = (where: string) =>
  new DomainError(
    "INVALID_INPUT",
    `${where}: contains a NUL character (U+0000) or an unpaired UTF-16 surrogate, which no text can hold`,
    "Remove the NUL and unpaired surrogate characters, and send it again.",
  );
