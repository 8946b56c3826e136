import fs from "node:fs";

/**
 * What swarm agents write down, one JSON object a line, appended synchronously so a SIGKILL
 * loses at most the record being written. The invariant checker reads these beside the database.
 *
 * Agents may share a key (decision 036), so a lease names its holder by the MCP session that
 * took it: every call record carries the session it went out in (the id between `rtses_` and the
 * `.` of the Mcp-Session-Id, as leases.session_id stores it), or null before the first connect.
 */

/** The checkpoint fields an agent writes and a claimant is handed. */
export interface CheckpointNotes {
  done: string | null;
  next: string | null;
  note: string | null;
  /** What a failed verification left for the next claim (decision 045); absent where none was read. */
  gotchas?: string | null;
}

export interface ClaimRecord {
  t: "claim";
  /** The claimant: the agent that pulled, or the orchestrator whose next_batch claimed it. */
  agent: string;
  session: string | null;
  userId: string;
  identifier: string;
  fence: number;
  expiresAt: string;
  allLanes: boolean;
  /** Claimed by an orchestrator's next_batch, for a subagent. */
  batch?: boolean;
  /** The checkpoint the claim reply carried. */
  checkpoint: CheckpointNotes | null;
  sentAt: number;
  receivedAt: number;
}

export type WriteKind = "heartbeat" | "checkpoint" | "finish" | "release";

export interface WriteRecord {
  t: "write";
  /** The writer: for a next_batch claim, the subagent its orchestrator handed the token to. */
  agent: string;
  session: string | null;
  kind: WriteKind;
  identifier: string;
  fence: number;
  /** "ok", a tool error code, or "transport" (no answer: refused connection, 5xx, timeout). */
  outcome: string;
  /** The reply (ok or refusal) said `alreadyFinished: true`: "your claim finished it". */
  alreadyFinished?: boolean;
  /** Sent after the lease's last known expiry: the server must refuse it. */
  stale: boolean;
  /** A resend after a transport failure (the first attempt may have landed). */
  retry: boolean;
  sentAt: number;
  receivedAt: number;
}

/**
 * A tokenless write to an issue a sibling on the same key holds (by what the sibling last knew,
 * live): the server must refuse it, CLAIM_MISMATCH while that lease is live.
 */
export interface ProbeRecord {
  t: "probe";
  agent: string;
  session: string | null;
  kind: Exclude<WriteKind, "release">;
  identifier: string;
  /** The sibling that holds it. */
  holder: string;
  outcome: string;
  alreadyFinished?: boolean;
  sentAt: number;
  receivedAt: number;
}

/**
 * Written before each next_issue (or an orchestrator's next_batch) goes out, so a claim whose
 * reply never got logged (the agent was killed, or the reply was lost) is still known to have
 * been in flight from then on.
 */
export interface PullRecord {
  t: "pull";
  agent: string;
  session: string | null;
  allLanes: boolean;
  sentAt: number;
}

/**
 * A call that got no answer or UNAVAILABLE: the agent retried. Judged by swarm/transport.ts against
 * the faults: a transport failure of a call to an instance while it was killed, or during a
 * PostgreSQL restart, is expected; any other is not.
 */
export interface RetryRecord {
  t: "retry";
  agent: string;
  tool: string;
  /** The error's code (ECONNRESET, ECONNREFUSED, UND_ERR_SOCKET, UNAVAILABLE, an HTTP status) and message. */
  reason: string;
  /** The instance the call went to, and when it went out (absent for a failure of the agent's own loop). */
  endpoint?: string;
  sentAt?: number;
  at: number;
}

/** An agent connected: a new MCP session, in agent process `proc`. */
export interface SessionRecord {
  t: "session";
  agent: string;
  session: string;
  proc: string;
  at: number;
}

/** The harness SIGKILLed (or, at the end, stopped) agent process `proc`: none of its sessions calls after `at`. */
export interface KilledRecord {
  t: "killed";
  proc: string;
  at: number;
}

/**
 * An agent took a poison issue (one whose every taker dies) and died on it: no call of its
 * session follows, nothing was written under the claim; it comes back in a new session once the
 * lease has lapsed, as a replaced process would.
 */
export interface DiedRecord {
  t: "died";
  agent: string;
  session: string | null;
  identifier: string;
  fence: number;
  at: number;
}

export type AgentRecord = ClaimRecord | PullRecord | WriteRecord | ProbeRecord | RetryRecord | SessionRecord | KilledRecord | DiedRecord;

export function appendRecord(file: string, record: AgentRecord): void {
  fs.appendFileSync(file, JSON.stringify(record) + "\n");
}

/** After a SIGKILL the last line may be torn: start a fresh one so this record stays whole. */
export function appendAfterKill(file: string, record: KilledRecord): void {
  fs.appendFileSync(file, "\n" + JSON.stringify(record) + "\n");
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
