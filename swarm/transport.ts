import type { AgentRecord, RetryRecord } from "./records.ts";

/**
 * The swarm's transport failures, attributed to its faults. A call whose span (sent to failed)
 * overlaps an outage of the instance it went to (killed until it listens again), or a PostgreSQL
 * restart (the app answers 503 or UNAVAILABLE), failed because of a fault the harness injected:
 * expected. Any other transport failure is unexpected: a defect to trace, so the run fails on it.
 */
export interface Outage {
  /** The instance's /mcp endpoint; none: every instance (a PostgreSQL restart). */
  endpoint?: string;
  what: string;
  from: number;
  to: number;
}

export interface TransportFigures {
  /** By the failure's code (ECONNRESET, ECONNREFUSED, 503, UNAVAILABLE, ...): how many, and how many a fault explains. */
  byCode: Record<string, { failures: number; expected: number }>;
  /** The failures no fault explains, described. */
  unexpected: string[];
}

/** How long after an outage a failure still counts as its own: a retry's backoff, a reconnect, a loaded machine. */
const SETTLE_MS = 3_000;

export const codeOf = (reason: string) => reason.split(" ", 1)[0] || "unknown";

export function attributeTransportFailures(records: AgentRecord[], outages: Outage[]): TransportFigures {
  const byCode: TransportFigures["byCode"] = {};
  const unexpected: string[] = [];
  const failures = records.filter((r): r is RetryRecord & { endpoint: string } => r.t === "retry" && r.endpoint !== undefined);
  for (const failure of failures) {
    const code = codeOf(failure.reason);
    const sentAt = failure.sentAt ?? failure.at;
    const explained = outages.some(
      (o) => (o.endpoint === undefined || o.endpoint === failure.endpoint) && sentAt <= o.to + SETTLE_MS && failure.at >= o.from,
    );
    const figures = (byCode[code] ??= { failures: 0, expected: 0 });
    figures.failures++;
    if (explained) figures.expected++;
    else unexpected.push(`${failure.agent} ${failure.tool} to ${failure.endpoint} sent ${new Date(sentAt).toISOString()}, failed after ${failure.at - sentAt} ms: ${failure.reason}`);
  }
  return { byCode, unexpected };
}
