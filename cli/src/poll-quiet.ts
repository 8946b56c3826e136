/**
 * An empty next_issue's `retryAfter`, honoured by the proxy (decision 076): until it passes, a
 * next_issue with the same arguments is answered here with the empty reply the server gave
 * (its retryAfter counting down) instead of polling the server again. Any other call the agent
 * makes (it may have filed, released or finished work) ends the quiet, as does a reply that is
 * not an empty one.
 */
export class PollQuiet {
  private quiet = new Map<string, { until: number; reply: Record<string, unknown> }>();

  private static key = (args: Record<string, unknown>) => JSON.stringify(Object.entries(args).sort(([a], [b]) => a.localeCompare(b)));

  /** The server's reply to a next_issue: an empty one with a retryAfter starts a quiet window. */
  heard(args: Record<string, unknown>, reply: Record<string, unknown> | undefined, now = Date.now()): void {
    this.quiet.clear();
    if (reply?.claimed !== false || typeof reply.retryAfter !== "number" || reply.retryAfter <= 0) return;
    this.quiet.set(PollQuiet.key(args), { until: now + reply.retryAfter * 1000, reply });
  }

  /** Another tool was called: what next_issue would find may have changed. */
  clear(): void {
    this.quiet.clear();
  }

  /** The reply to give a next_issue now without asking the server, or undefined to ask it. */
  answer(args: Record<string, unknown>, now = Date.now()): Record<string, unknown> | undefined {
    const entry = this.quiet.get(PollQuiet.key(args));
    if (!entry || now >= entry.until) return undefined;
    return { ...entry.reply, retryAfter: Math.ceil((entry.until - now) / 1000) };
  }
}
