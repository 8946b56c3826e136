import pino from "pino";

export type Logger = pino.Logger;

/**
 * Structured JSON logs. Callers log ids and codes, never secrets or decrypted content; these
 * paths are censored besides, should a header set, a key or a database error's parameters
 * (which can hold a key's hash or ciphertext) ever reach a log call.
 */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "retasc" },
    redact: {
      paths: [
        "authorization",
        "*.authorization",
        "cookie",
        "*.cookie",
        "headers",
        "*.headers",
        "key",
        "*.key",
        "claimToken",
        "*.claimToken",
        "token",
        "*.token",
        "password",
        "*.password",
        "parameters",
        "*.parameters",
      ],
      censor: "[redacted]",
    },
  });
}
