import fs from "node:fs";

/**
 * What swarm agents write down, one JSON object a line, appended synchronously so a SIGKILL
 * loses at most the record being written. The invariant checker reads these beside the database.
 */

/** The checkpoint fields an agent writes and a claimant is handed. */
export interface CheckpointNotes {
  done: string | null;
  next: string | null;
  note: string | null;
}

export interface ClaimRecord {
  t: "claim";
  /** The agent's name, which is also its key's runtime label (so leases name their agent). */
  agent: string;
  userId: string;
  identifier: string;
  fence: number;
  expiresAt: string;
  allLanes: boolean;
  /** The checkpoint the claim reply carried. */
  checkpoint: CheckpointNotes | null;
  sentAt: number;
  receivedAt: number;
}

export type WriteKind = "heartbeat" | "checkpoint" | "finish" | "release";

export interface WriteRecord {
  t: "write";
  agent: string;
  kind: WriteKind;
  identifier: string;
  fence: number;
  /** "ok", a tool error code, or "transport" (no answer: refused connection, 5xx, timeout). */
  outcome: string;
  /** Sent after the lease's last known expiry: the server must refuse it. */
  stale: boolean;
  /** A resend after a transport failure (the first attempt may have landed). */
  retry: boolean;
  sentAt: number;
  receivedAt: number;
}

/**
 * Written before each next_issue goes out, so a claim whose reply never got logged (the agent
 * was killed, or the reply was lost) is still known to have been in flight from then on.
 */
export interface PullRecord {
  t: "pull";
  agent: string;
  allLanes: boolean;
  sentAt: number;
}

/** A call that got no answer or UNAVAILABLE: the agent retried (counted, not judged). */
export interface RetryRecord {
  t: "retry";
  agent: string;
  tool: string;
  reason: string;
  at: number;
}

export type AgentRecord = ClaimRecord | PullRecord | WriteRecord | RetryRecord;

export function appendRecord(file: string, record: AgentRecord): void {
  fs.appendFileSync(file, JSON.stringify(record) + "\n");
}

/** Every record of every agent log file; a torn last line (the writer was killed mid-write) is skipped. */
export function readRecords(files: string[]): AgentRecord[] {
  const records: AgentRecord[] = [];
  for (const file of files) {
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, "utf8").split("\n")) {
      if (!line.trim()) continue;
      try {
        records.push(JSON.parse(line) as AgentRecord);
      } catch {
        // torn by a SIGKILL
      }
    }
  }
  return records;
}
