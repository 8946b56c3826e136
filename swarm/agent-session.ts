import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { AgentProcessConfig, AgentSpec } from "./agent-spec.ts";
import { appendRecord, type AgentRecord, type CheckpointNotes } from "./records.ts";

/**
 * A swarm agent's MCP session (swarm/agent.ts): the official SDK client over /mcp to a random
 * app instance, its calls retried through transport failures, everything logged for the checker.
 */

export type Outcome =
  | { kind: "ok"; value: Record<string, any> }
  | { kind: "error"; code: string; details: Record<string, any> }
  | { kind: "transport"; reason: string };

/** A claim as an agent works it: from its own next_issue, or handed over by its orchestrator. */
export interface Claim {
  identifier: string;
  fence: number;
  token: string;
  expiresAt: string;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const pick = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)]!;
const CALL_TIMEOUT_MS = 20_000;
export const outcomeOf = (o: Outcome) => (o.kind === "ok" ? "ok" : o.kind === "error" ? o.code : "transport");
export const alreadyFinished = (o: Outcome) =>
  (o.kind === "ok" && o.value.alreadyFinished === true) || (o.kind === "error" && o.details.alreadyFinished === true) ? { alreadyFinished: true } : {};

/** One MCP session (an SDK client) and the calls made in it, logged with that session. */
export class Session {
  private client: Client | null = null;
  /** The instance this session's connection goes to: a transport failure is judged against its faults. */
  private endpoint = "";
  /** When the last call went out: a transport failure spans from then to its retry record. */
  private lastSentAt = 0;
  /** The id leases record: what the Mcp-Session-Id carries between `rtses_` and the `.`. */
  session: string | null = null;

  constructor(
    readonly spec: AgentSpec,
    readonly config: AgentProcessConfig,
  ) {}

  log(record: AgentRecord) {
    appendRecord(this.config.logFile, record);
  }

  private async connected(): Promise<Client> {
    for (let attempt = 0; ; attempt++) {
      if (this.client) return this.client;
      const client = new Client({ name: `swarm-${this.spec.name}`, version: "1.0.0" });
      this.endpoint = pick(this.config.endpoints);
      const transport = new StreamableHTTPClientTransport(new URL(this.endpoint), {
        requestInit: { headers: { authorization: `Bearer ${this.spec.key}` } },
      });
      const sentAt = Date.now();
      try {
        await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
        this.client = client;
        this.session = /^rtses_([^.]+)\./.exec(transport.sessionId ?? "")?.[1] ?? null;
        if (this.session) this.log({ t: "session", agent: this.spec.name, session: this.session, proc: this.config.proc, at: Date.now() });
      } catch (error) {
        this.log({ t: "retry", agent: this.spec.name, tool: "initialize", reason: reasonOf(error), endpoint: this.endpoint, sentAt, at: Date.now() });
        await client.close().catch(() => {});
        await sleep(backoff(attempt));
      }
    }
  }

  /** Dead on a poison issue: the session is over; the next call starts a new one, logged under none until it connects. */
  async die() {
    this.session = null;
    await this.reconnect();
  }

  /** Drops the connection so the next call goes to a random instance (in a new session). */
  async reconnect() {
    const old = this.client;
    this.client = null;
    await old?.close().catch(() => {});
  }

  async call(tool: string, args: Record<string, unknown>): Promise<Outcome> {
    const client = await this.connected();
    this.lastSentAt = Date.now();
    try {
      const result = (await client.callTool({ name: tool, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS })) as CallToolResult;
      if (result.isError) {
        const error = (result.structuredContent as any)?.error ?? {};
        const code = String(error.code ?? "UNKNOWN");
        // The server could not finish the call (its database went away): the outcome is unknown.
        if (code === "UNAVAILABLE") return { kind: "transport", reason: "UNAVAILABLE" };
        return { kind: "error", code, details: error.details ?? {} };
      }
      return { kind: "ok", value: result.structuredContent as Record<string, any> };
    } catch (error) {
      return { kind: "transport", reason: reasonOf(error) };
    }
  }

  /** Calls until the server answers (ok or a refusal), reconnecting after each transport failure. */
  async answered(tool: string, args: Record<string, unknown>, onAttempt?: (o: Outcome, attempt: number) => void, beforeAttempt?: () => void) {
    for (let attempt = 0; ; attempt++) {
      beforeAttempt?.();
      const outcome = await this.call(tool, args);
      onAttempt?.(outcome, attempt);
      if (outcome.kind !== "transport") return outcome;
      this.log({ t: "retry", agent: this.spec.name, tool, reason: outcome.reason, endpoint: this.endpoint, sentAt: this.lastSentAt, at: Date.now() });
      await this.reconnect();
      await sleep(backoff(attempt));
    }
  }

  /** A pull (next_issue, or next_batch for an orchestrator), logged before each attempt goes out. */
  async pull(tool: string, args: Record<string, unknown>, allLanes: boolean) {
    const sentAt = Date.now();
    const outcome = await this.answered(tool, allLanes ? { ...args, allLanes: true } : args, undefined, () =>
      this.log({ t: "pull", agent: this.spec.name, session: this.session, allLanes, sentAt: Date.now() }),
    );
    return { outcome, sentAt };
  }

  logClaim(claim: Record<string, any>, allLanes: boolean, sentAt: number, batch = false) {
    this.log({
      t: "claim",
      agent: this.spec.name,
      session: this.session,
      userId: this.spec.userId,
      identifier: claim.identifier,
      fence: claim.fence,
      expiresAt: claim.expiresAt,
      allLanes,
      ...(batch ? { batch } : {}),
      checkpoint: notesOf(claim.checkpoint),
      sentAt,
      receivedAt: Date.now(),
    });
  }

  async loop(once: () => Promise<void>): Promise<never> {
    for (;;) {
      try {
        await once();
      } catch (error) {
        this.log({ t: "retry", agent: this.spec.name, tool: "loop", reason: reasonOf(error), at: Date.now() });
        await sleep(200);
      }
    }
  }
}

function notesOf(checkpoint: unknown): CheckpointNotes | null {
  if (!checkpoint || typeof checkpoint !== "object") return null;
  const c = checkpoint as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === "string" ? v : null);
  return { done: text(c.done), next: text(c.next), note: text(c.note), gotchas: text(c.gotchas) };
}

/** The error's code, or its cause's (fetch throws "fetch failed" with ECONNRESET, ECONNREFUSED... as the cause), and its message. */
export function reasonOf(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown; cause?: { code?: unknown; cause?: { code?: unknown } } };
  const code = e?.cause?.code ?? e?.cause?.cause?.code ?? e?.code ?? "";
  return `${code} ${String(e?.message ?? error)}`.trim().slice(0, 200);
}

const backoff = (attempt: number) => Math.min(2_000, 50 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random());
