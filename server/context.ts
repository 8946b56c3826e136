import type { Db } from "../db/client.ts";
import type { Config } from "./config/index.ts";
import type { Keyring } from "./crypto/index.ts";

export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

/** Publishes change events (PostgreSQL NOTIFY); the Dash's live view listens. */
export interface EventPublisher {
  publish(tx: Db, event: RetascEvent): Promise<void>;
}
export interface RetascEvent {
  orgId: string;
  kind: string;
  issueId?: string;
  identifier?: string;
  [key: string]: unknown;
}

/** Long-lived pieces every server/ function may need, built once at boot. */
export interface Services {
  db: Db;
  config: Config;
  keyring: Keyring;
  clock: Clock;
  events: EventPublisher;
}

/**
 * Who is acting. Every write records the human principal (`userId`), the agent key and
 * the runtime; `system` is the sweeps and the operator commands.
 */
export interface Principal {
  kind: "agent" | "human" | "system";
  orgId: string;
  userId: string | null;
  keyId: string | null;
  runtime: string | null;
  /** The project a key is bound to (its default, and where it is dispatched work), or null. */
  projectId: string | null;
  /**
   * The projects this principal reaches, or null for every project of the org: a member's
   * scope, which their agents inherit; read once per request with the membership (decision 042).
   * Everything outside reads NOT_FOUND (server/orgs/scope.ts).
   */
  projectIds: string[] | null;
  claimCap: number | null;
  /**
   * The MCP session the call came in (the unsigned part of a verified Mcp-Session-Id), or
   * undefined: a client that sent none, the Dash, the CLI, jobs. Leases are held by a session,
   * never by the key alone (decision 036).
   */
  sessionId?: string;
  /** The key has a line waiting for its next call (server/verification/riders.ts). */
  riderWaiting?: boolean;
  /** A hosted key (`retasc key mint --hosted`): no watchdog proxy will ever renew its claims (server/mcp/footer.ts). */
  hosted?: boolean;
  /** An agent key's org and project by name, for what its writes say they landed in (server/mcp/footer.ts). */
  orgName?: string;
  projectName?: string | null;
  projectPrefix?: string | null;
  /** The org is frozen for a move between stacks (server/orgs/freeze.ts), read with the key. */
  orgFrozen?: boolean;
}

export interface Ctx extends Services {
  principal: Principal;
}

export function systemPrincipal(orgId: string): Principal {
  return { kind: "system", orgId, userId: null, keyId: null, runtime: "retasc", projectId: null, projectIds: null, claimCap: null };
}
