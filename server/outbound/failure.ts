/**
 * How a platform refused a message: `rate` (429: wait `retryAfterMs`, then send again),
 * `retry` (a blip: the job's backoff), `permanent` (blocked, revoked, no such address: the
 * binding is marked broken with `reason` and nothing is retried). `reason` is the platform's
 * short description, shown to the person on the Dash; never message content.
 */
export class SendFailure extends Error {
  constructor(
    public readonly kind: "rate" | "retry" | "permanent",
    public readonly reason: string,
    public readonly retryAfterMs = 0,
  ) {
    super(`${kind}: ${reason}`);
    this.name = "SendFailure";
  }
}

/** A platform's reason, kept short and on one line. */
export const shortReason = (text: unknown): string => String(text ?? "refused").replace(/\s+/g, " ").slice(0, 200);

/** Seconds from a Retry-After (header or body field) as milliseconds; a missing or odd value waits one second. */
export function retryAfterMs(seconds: unknown): number {
  const n = Number(seconds);
  return Number.isFinite(n) && n >= 0 ? Math.ceil(n * 1000) : 1000;
}
