import crypto from "node:crypto";

/** Constant-time equality of two secrets (a length difference is also answered in constant time). */
export function sameSecret(given: string | null, expected: string): boolean {
  if (given === null) return false;
  const a = crypto.createHash("sha256").update(given).digest();
  const b = crypto.createHash("sha256").update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}

/** What a webhook door answers: a status and a small JSON body (never a stack trace). */
export interface WebhookReply {
  status: number;
  body: unknown;
}

export const refused = (status: number, message: string): WebhookReply => ({ status, body: { error: { code: status === 401 ? "UNAUTHORIZED" : "INVALID_INPUT", message } } });
