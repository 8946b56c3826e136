import { expect, test } from "vitest";
import type { AgentRecord } from "./records.ts";
import { attributeTransportFailures, type Outage } from "./transport.ts";

/** A transport failure is the fault's only if it went to the instance killed (or any, in a PostgreSQL restart) while it was down. */
test("transport failures are attributed to the outage they overlap, of the instance they went to; any other is unexpected", () => {
  const a = "http://127.0.0.1:1001/mcp";
  const b = "http://127.0.0.1:1002/mcp";
  const outages: Outage[] = [
    { endpoint: a, what: "app instance killed", from: 10_000, to: 14_000 },
    { what: "PostgreSQL restart", from: 30_000, to: 31_000 },
  ];
  const failure = (reason: string, endpoint: string, sentAt: number, at: number): AgentRecord => ({ t: "retry", agent: "swarm-1", tool: "next_issue", reason, endpoint, sentAt, at });
  const records: AgentRecord[] = [
    failure("ECONNRESET fetch failed", a, 9_900, 10_001), // in flight when a was killed
    failure("ECONNREFUSED fetch failed", a, 12_000, 12_001), // a is down
    failure("ECONNREFUSED fetch failed", a, 16_500, 16_501), // a's restart settling
    failure("ECONNRESET fetch failed", b, 12_000, 12_001), // b was never killed
    failure("UNAVAILABLE", b, 30_500, 30_600), // PostgreSQL restarting: every instance
    failure("ECONNRESET fetch failed", a, 40_000, 40_002), // long after
    { t: "retry", agent: "swarm-1", tool: "loop", reason: "TypeError x", at: 12_000 }, // the agent's own loop: not a call
  ];
  const figures = attributeTransportFailures(records, outages);
  expect(figures.byCode).toEqual({
    ECONNRESET: { failures: 3, expected: 1 },
    ECONNREFUSED: { failures: 2, expected: 2 },
    UNAVAILABLE: { failures: 1, expected: 1 },
  });
  expect(figures.unexpected).toHaveLength(2);
  expect(figures.unexpected[0]).toContain(b);
  expect(figures.unexpected[1]).toContain("failed after 2 ms: ECONNRESET");
});
