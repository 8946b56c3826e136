import crypto from "node:crypto";

/**
 * What a swarm agent process is told (SWARM_AGENT_CONFIG, JSON): the harness (swarm/run.ts)
 * writes it, the process (swarm/agent.ts) reads it.
 */

export type Role = "solo" | "shared" | "subagent";

export interface AgentSpec {
  name: string;
  key: string;
  userId: string;
  role: Role;
  /** Subagents: their orchestrator's team (the team's slots run in one process, on one key). */
  team?: number;
}

export interface AgentProcessConfig {
  endpoints: string[];
  agents: AgentSpec[];
  /** This process's name in the log (its records' sessions end when the harness kills it). */
  proc: string;
  logFile: string;
  ttlMs: number;
  /** Share of claims an agent abandons silently (no heartbeat) and then writes with the stale token. */
  silentRate: number;
  /** Share of claims handed back with release_issue. */
  releaseRate: number;
  /** Share of a shared-key agent's pulls preceded by a tokenless write to a sibling's live lease. */
  probeRate: number;
  /** Verification on (decision 045): every finish sends evidence, a commit per claim (commitFor). */
  verify?: { seed: number };
  /** Issues whose identifier starts with this are poison: every agent that takes one dies on it. */
  poisonPrefix?: string;
}

/** The commit a claim's work ends in: one per (issue, fence), so a reopened issue's next finish names a new one. */
export function commitFor(seed: number, identifier: string, fence: number): string {
  return crypto.createHash("sha1").update(`${seed}:${identifier}:${fence}`).digest("hex");
}
