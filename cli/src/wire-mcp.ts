/**
 * The replies of the MCP tools this CLI calls (docs/mcp-tools.md), as it reads them: restated,
 * like the /api/cli replies in ./wire.ts, rather than imported from the server.
 */
import type { Role } from "./wire.ts";

/** MCP whoami: the org, project, key and human behind an agent key. */
export interface McpWhoami {
  org: { id: string; name: string };
  project: { id: string; prefix: string } | null;
  key: { id: string; prefix: string; runtime: string };
  human: { email: string; role: Role };
}

/** MCP next_issue / claim_issue: a claim. */
export interface Claim {
  identifier: string;
  claimToken: string;
  expiresAt: string;
  branch: string;
  checkpoint: { done?: string | null; next?: string | null } | null;
  issue?: { title: string };
}

/** MCP next_issue when nothing is claimable: why, and what other lanes hold. */
export interface NoClaim {
  claimToken?: undefined;
  message?: string;
  otherLanes?: number;
  /** Seconds to wait before polling again. */
  retryAfter?: number;
}

/** MCP save_issue: the issue as saved (printed as it is). */
export type SavedIssue = Record<string, unknown>;

/** MCP heartbeat and checkpoint: the renewed lease. */
export interface Renewed {
  identifier: string;
  expiresAt: string;
  fence: number;
}

/** MCP release_issue */
export interface Released {
  identifier: string;
  released: boolean;
  status: string;
  held: boolean;
  message: string;
}

/** MCP check_claim: `status` is where the claim stands for the calling session, `issueStatus` the issue's. */
export interface CheckedClaim {
  identifier: string;
  status: string;
  issueStatus?: string;
  held: boolean;
  youHold: boolean;
  yourKey?: boolean;
  holder: { runtime?: string; email?: string } | null;
  expiresAt: string | null;
}

/** MCP get_issue, the fields `retasc issue show` prints. */
export interface IssueView {
  identifier: string;
  title: string;
  body: string | null;
  status: string;
  statusNote?: string;
  priority: number;
  assignee: { email?: string; name?: string } | null;
  branch: string | null;
  lease: { runtime?: string; expiresAt?: string } | null;
  openBlockers?: (string | { identifier: string })[];
  checkpoint: { done?: string | null; next?: string | null; gotchas?: string | null; note?: string | null } | null;
}

/** MCP list_issues: one line per issue. */
export interface IssueLine {
  identifier: string;
  title: string;
  status: string;
  priority: number;
}
