/**
 * A swarm agent process: runs several agents, each with the official MCP SDK client over
 * /mcp against a random app instance, looping next_issue → checkpoint/heartbeat → finish.
 * Some go silent past their lease and then try their stale token; some release. Transport
 * failures, 5xx and UNAVAILABLE are retried (on another instance). Everything observed is
 * appended to a log the invariant checker reads. Configured by SWARM_AGENT_CONFIG (JSON).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { appendRecord, type AgentRecord, type CheckpointNotes, type WriteKind } from "./records.ts";

export interface AgentProcessConfig {
  endpoints: string[];
  agents: { name: string; key: string; userId: string }[];
  logFile: string;
  ttlMs: number;
  /** Share of claims an agent abandons silently (no heartbeat) and then writes with the stale token. */
  silentRate: number;
  /** Share of claims handed back with release_issue. */
  releaseRate: number;
}

type Outcome =
  | { kind: "ok"; value: Record<string, any> }
  | { kind: "error"; code: string }
  | { kind: "transport"; reason: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)]!;
const CALL_TIMEOUT_MS = 20_000;

class Agent {
  private client: Client | null = null;
  private seq = 0;

  constructor(
    private readonly spec: AgentProcessConfig["agents"][number],
    private readonly config: AgentProcessConfig,
  ) {}

  private log(record: AgentRecord) {
    appendRecord(this.config.logFile, record);
  }

  private async connected(): Promise<Client> {
    for (let attempt = 0; ; attempt++) {
      if (this.client) return this.client;
      const client = new Client({ name: `swarm-${this.spec.name}`, version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(pick(this.config.endpoints)), {
        requestInit: { headers: { authorization: `Bearer ${this.spec.key}` } },
      });
      try {
        await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
        this.client = client;
      } catch (error) {
        this.log({ t: "retry", agent: this.spec.name, tool: "initialize", reason: reasonOf(error), at: Date.now() });
        await client.close().catch(() => {});
        await sleep(backoff(attempt));
      }
    }
  }

  /** Drops the connection so the next call goes to a random instance. */
  private async reconnect() {
    const old = this.client;
    this.client = null;
    await old?.close().catch(() => {});
  }

  private async call(tool: string, args: Record<string, unknown>): Promise<Outcome> {
    const client = await this.connected();
    try {
      const result = (await client.callTool({ name: tool, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS })) as CallToolResult;
      if (result.isError) {
        const code = String((result.structuredContent as any)?.error?.code ?? "UNKNOWN");
        // The server could not finish the call (its database went away): the outcome is unknown.
        if (code === "UNAVAILABLE") return { kind: "transport", reason: "UNAVAILABLE" };
        return { kind: "error", code };
      }
      return { kind: "ok", value: result.structuredContent as Record<string, any> };
    } catch (error) {
      return { kind: "transport", reason: reasonOf(error) };
    }
  }

  /** Calls until the server answers (ok or a refusal), reconnecting after each transport failure. */
  private async answered(
    tool: string,
    args: Record<string, unknown>,
    onAttempt?: (o: Outcome, attempt: number) => void,
    beforeAttempt?: () => void,
  ) {
    for (let attempt = 0; ; attempt++) {
      beforeAttempt?.();
      const outcome = await this.call(tool, args);
      onAttempt?.(outcome, attempt);
      if (outcome.kind !== "transport") return outcome;
      this.log({ t: "retry", agent: this.spec.name, tool, reason: outcome.reason, at: Date.now() });
      await this.reconnect();
      await sleep(backoff(attempt));
    }
  }

  async run(): Promise<never> {
    for (;;) {
      try {
        await this.once();
      } catch (error) {
        this.log({ t: "retry", agent: this.spec.name, tool: "loop", reason: reasonOf(error), at: Date.now() });
        await sleep(200);
      }
    }
  }

  private async pull(allLanes: boolean) {
    const sentAt = Date.now();
    const outcome = await this.answered("next_issue", allLanes ? { allLanes: true } : {}, undefined, () =>
      this.log({ t: "pull", agent: this.spec.name, allLanes, sentAt: Date.now() }),
    );
    return { outcome, sentAt };
  }

  private async once() {
    let allLanes = false;
    let { outcome, sentAt } = await this.pull(false);
    if (outcome.kind === "ok" && !outcome.value.claimToken && outcome.value.otherLanes > 0) {
      allLanes = true;
      ({ outcome, sentAt } = await this.pull(true));
    }
    if (outcome.kind !== "ok" || !outcome.value.claimToken) {
      // Nothing claimable (or CLAIM_CAP while a killed predecessor's lease runs out): poll again.
      await sleep(80 + Math.random() * 220);
      return;
    }
    const claim = outcome.value;
    const identifier = claim.identifier as string;
    const fence = claim.fence as number;
    const token = claim.claimToken as string;
    this.log({
      t: "claim",
      agent: this.spec.name,
      userId: this.spec.userId,
      identifier,
      fence,
      expiresAt: claim.expiresAt,
      allLanes,
      checkpoint: notesOf(claim.checkpoint),
      sentAt,
      receivedAt: Date.now(),
    });
    let knownExpiry = Date.parse(claim.expiresAt);

    /** A fenced write; false once the lease is gone (refused), so the agent drops the issue. */
    const write = async (kind: WriteKind, tool: string, args: Record<string, unknown>): Promise<boolean> => {
      const sentAt = Date.now();
      const stale = sentAt > knownExpiry;
      const final = await this.answered(tool, { identifier, claimToken: token, ...args }, (o, attempt) => {
        this.log({
          t: "write",
          agent: this.spec.name,
          kind,
          identifier,
          fence,
          outcome: o.kind === "ok" ? "ok" : o.kind === "error" ? o.code : "transport",
          // A resend of a stale write is stale too: had the first one landed, that was the violation.
          stale,
          retry: attempt > 0,
          sentAt: attempt === 0 ? sentAt : Date.now(),
          receivedAt: Date.now(),
        });
      });
      if (final.kind !== "ok") return false;
      if (typeof final.value.expiresAt === "string") knownExpiry = Date.parse(final.value.expiresAt);
      return true;
    };
    const notes = () => {
      this.seq++;
      return { done: `${this.spec.name}:${identifier}:f${fence}:${this.seq}`, next: `finish ${identifier}` };
    };

    const roll = Math.random();
    if (Math.random() < 0.8 && !(await write("checkpoint", "checkpoint", notes()))) return;
    if (roll < this.config.silentRate) {
      // Silent: no heartbeat past the lease, then every write with the stale token must be refused.
      await sleep(Math.max(0, knownExpiry - Date.now()) + 150 + Math.random() * this.config.ttlMs);
      await write("heartbeat", "heartbeat", {});
      await write("checkpoint", "checkpoint", { ...notes(), note: "stale" });
      await write("finish", "save_issue", { status: "done" });
      return;
    }
    if (roll < this.config.silentRate + this.config.releaseRate) {
      await write("release", "release_issue", { note: `released by ${this.spec.name}` });
      return;
    }
    await sleep(Math.random() * 20);
    if (!(await write("heartbeat", "heartbeat", {}))) return;
    await write("finish", "save_issue", { status: "done" });
  }
}

function notesOf(checkpoint: unknown): CheckpointNotes | null {
  if (!checkpoint || typeof checkpoint !== "object") return null;
  const c = checkpoint as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === "string" ? v : null);
  return { done: text(c.done), next: text(c.next), note: text(c.note) };
}

function reasonOf(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown };
  return `${e?.code ?? ""} ${String(e?.message ?? error)}`.trim().slice(0, 200);
}

const backoff = (attempt: number) => Math.min(2_000, 50 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random());

const config = JSON.parse(process.env.SWARM_AGENT_CONFIG ?? "null") as AgentProcessConfig | null;
if (!config) {
  process.stderr.write("swarm agent: SWARM_AGENT_CONFIG is not set\n");
  process.exit(2);
}
process.on("SIGTERM", () => process.exit(0));
for (const spec of config.agents) void new Agent(spec, config).run();
