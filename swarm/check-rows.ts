import { sql } from "drizzle-orm";
import type { CheckpointNotes } from "./records.ts";

/** The rows the swarm's checker reads after a run (swarm/check-data.ts), and what its checks share. */
export interface IssueRow {
  id: string;
  identifier: string;
  number: number;
  priority: number;
  assignee_id: string | null;
  created_ms: number;
  status: string;
  project_id: string;
  verification: string | null;
  quarantined_ms: number | null;
  quarantine_reason: string | null;
}
export interface LeaseRow {
  id: string;
  issue_id: string;
  fence: number;
  user_id: string;
  key_id: string | null;
  /** The MCP session holding it: with shared keys, the session names the holder, not the key. */
  session_id: string | null;
  claimed_ms: number;
  expires_ms: number;
  /** The last renewal, and by what: 'heartbeat' (a heartbeat or checkpoint) or 'calls' (the session's own calls). */
  renewed_ms: number;
  renewed_by: string | null;
  ended_ms: number | null;
  end_reason: string | null;
}
export interface ActivityRow {
  id: number;
  issue_id: string;
  kind: string;
  created_ms: number;
  committed_ms: number | null;
  /** The transaction that wrote it (`xmin`): a claim and a finish can share one (decision 124). */
  xid: string;
  fence: number | null;
  by: string | null;
  /** verified: what the verification became (passed). */
  verification: string | null;
  /** heartbeat: how many beats its run holds, and the last one's time (a run is one row, decision 105). */
  beats: number;
  last_ms: number;
}
export interface CheckpointRow {
  issue_id: string;
  created_ms: number;
  committed_ms: number | null;
  notes: CheckpointNotes;
}

/** A timestamp column as epoch milliseconds. */
export const ms = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000)::float8`);

/** Appends `value` to the list `map` holds under `key`, starting the list if there is none. */
export function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Reports one violation of a kind; the checker keeps up to 20 examples a kind (swarm/checker.ts). */
export type Violation = (kind: string, message: string) => void;

export const iso = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));
