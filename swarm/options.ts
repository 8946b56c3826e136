import type { CheckResult } from "./checker.ts";
import type { FakeCiFigures } from "./fake-ci.ts";
import type { MetricsReport } from "./metrics.ts";
import type { Role } from "./agent-spec.ts";
import type { TransportFigures } from "./transport.ts";

/** What a swarm run (swarm/run.ts) takes, and what it gives back. */

export interface SwarmOptions {
  agents: number;
  issues: number;
  instances: number;
  /** Time budget: the run fails if the issues are not all finished by then. */
  minutes: number;
  agentsPerProcess?: number;
  leaseTtlSeconds?: number;
  /** SIGKILLs of agent processes, spread over the run. */
  agentKills?: number;
  appRestarts?: number;
  postgresRestarts?: number;
  /** Use a private Redis (BullMQ, separate worker processes) and restart it; else inline workers. */
  redis?: boolean;
  redisRestarts?: number;
  silentRate?: number;
  releaseRate?: number;
  /** Share of a shared-key agent's pulls preceded by a tokenless write to a sibling's live lease. */
  probeRate?: number;
  /**
   * Through a PgBouncer in transaction mode in front of the private PostgreSQL (DATABASE_URL
   * pooled, DATABASE_DIRECT_URL direct), as on a managed PostgreSQL.
   */
  pooler?: boolean;
  /**
   * Verification on (decision 045): the project verifies finishes in CI (mode ci, required check
   * `test`), every finish carries its claim's commit, and a fake CI (swarm/fake-ci.ts) attests
   * each pending finish over HTTP with a CI key, failing a seeded share of commits (failRate,
   * default 0.2) and passing an issue's commits after maxFailures (default 2) red runs.
   */
  verify?: { failRate?: number; maxFailures?: number };
  /**
   * Poison issues: every agent that takes one dies on it (writes nothing, its session makes no
   * further call). They live in a project of their own whose quarantine_after is K (default 3),
   * and must be quarantined after exactly K abandoned claims (decision 055). The keys are then
   * org-wide, so agents are dispatched from both projects.
   */
  poison?: { issues: number; quarantineAfter?: number };
  seed?: number;
  log?: (line: string) => void;
}

export interface SwarmResult {
  check: CheckResult;
  /** Agents by kind; orchestrators are extra sessions, one per team of subagents. */
  agents: Record<Role | "orchestrator", number>;
  seconds: number;
  issuesPerSecond: number;
  faults: { agentKills: number; appKills: number; postgresRestarts: number; redisRestarts: number; faultErrors: string[] };
  seed: number;
  /** The app instances' output when something failed. */
  appOutput: string;
  /** /metrics of the apps and workers, scraped during the run (swarm/metrics.ts). */
  metrics: MetricsReport;
  /** The agents' transport failures (ECONNRESET and the rest), each explained by a fault or not (swarm/transport.ts). */
  transport: TransportFigures;
  /** The fake CI's figures, with verification on. */
  ci?: FakeCiFigures;
  /** Poison issues and their project's threshold. */
  poison?: { issues: number; quarantineAfter: number };
}
