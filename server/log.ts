import pino from "pino";

export type Logger = pino.Logger;

/** Structured JSON logs. Callers log ids and codes, never secrets or decrypted content. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "retasc" },
    redact: { paths: ["authorization", "*.authorization", "key", "*.key", "claimToken", "*.claimToken"], censor: "[redacted]" },
  });
}
