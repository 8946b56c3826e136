/**
 * A swarm agent process: runs several agents, each with the official MCP SDK client over /mcp
 * against a random app instance, each in its own MCP session. Three kinds (decision 036):
 * - solo: its own key; loops next_issue → checkpoint/heartbeat → finish;
 * - shared: the same loop, on one key shared with other agents; now and then it also writes,
 *   without a token, to an issue a sibling holds (it must be refused CLAIM_MISMATCH);
 * - subagent: one of an orchestrator's team on the orchestrator's key; the orchestrator claims a
 *   wave with next_batch {claim:true} and hands each claim's token to a subagent, which works it
 *   from its own session. The orchestrator waits for its wave, so its calls renew nothing meanwhile.
 * Some go silent past their lease and then try their stale token; some release. Transport
 * failures, 5xx and UNAVAILABLE are retried (on another instance, in a new session). Everything
 * observed is appended to a log the invariant checker reads. Configured by SWARM_AGENT_CONFIG (JSON).
 * With verification on, every finish carries evidence: a commit of its own per claim. An agent
 * that takes a poison issue dies on it: nothing written, no further call of its session.
 */
import crypto from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { appendRecord, type AgentRecord, type CheckpointNotes, type ProbeRecord, type WriteKind } from "./records.ts";

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

type Outcome =
  | { kind: "ok"; value: Record<string, any> }
  | { kind: "error"; code: string; details: Record<string, any> }
  | { kind: "transport"; reason: string };

/** A claim as an agent works it: from its own next_issue, or handed over by its orchestrator. */
interface Claim {
  identifier: string;
  fence: number;
  token: string;
  expiresAt: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)]!;
const CALL_TIMEOUT_MS = 20_000;
const outcomeOf = (o: Outcome) => (o.kind === "ok" ? "ok" : o.kind === "error" ? o.code : "transport");
const alreadyFinished = (o: Outcome) =>
  (o.kind === "ok" && o.value.alreadyFinished === true) || (o.kind === "error" && o.details.alreadyFinished === true) ? { alreadyFinished: true } : {};

/** One MCP session (an SDK client) and the calls made in it, logged with that session. */
class Session {
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

/** What this process's shared-key agents hold, and until when they last knew: their siblings' probe targets. */
const held = new Map<string, { agent: string; until: number }>();

class Agent extends Session {
  private seq = 0;

  run() {
    return this.loop(async () => {
      if (this.spec.role === "shared" && Math.random() < this.config.probeRate) await this.probe();
      let allLanes = false;
      let { outcome, sentAt } = await this.pull("next_issue", {}, false);
      if (outcome.kind === "ok" && !outcome.value.claimToken && outcome.value.otherLanes > 0) {
        allLanes = true;
        ({ outcome, sentAt } = await this.pull("next_issue", {}, true));
      }
      if (outcome.kind !== "ok" || !outcome.value.claimToken) {
        // Nothing claimable (or CLAIM_CAP while a killed predecessor's lease runs out): poll again.
        await sleep(80 + Math.random() * 220);
        return;
      }
      this.logClaim(outcome.value, allLanes, sentAt);
      const { identifier, fence, claimToken, expiresAt } = outcome.value;
      // Died on a poison issue: it comes back in a new session, as a replaced process would.
      if ((await this.work({ identifier, fence, token: claimToken, expiresAt })) === "died") await this.die();
    });
  }

  /** A tokenless write, from this session, to an issue a sibling on this key holds: never accepted. */
  private async probe() {
    const now = Date.now();
    const targets = [...held].filter(([, h]) => h.agent !== this.spec.name && h.until > now + 300);
    if (targets.length === 0) return;
    const [identifier, { agent: holder }] = pick(targets);
    const [kind, tool, args] = pick([
      ["heartbeat", "heartbeat", {}],
      ["checkpoint", "checkpoint", { done: `${this.spec.name} took it over`, note: "probe" }],
      ["finish", "save_issue", { status: "done", ...this.evidence(identifier, 0) }],
    ] as const);
    const sentAt = Date.now();
    const outcome = await this.call(tool, { identifier, ...args });
    const record: ProbeRecord = { t: "probe", agent: this.spec.name, session: this.session, kind, identifier, holder, outcome: outcomeOf(outcome), ...alreadyFinished(outcome), sentAt, receivedAt: Date.now() };
    this.log(record);
  }

  /** A finish's evidence when the project verifies finishes: this claim's commit. */
  evidence(identifier: string, fence: number): { evidence?: { commit: string } } {
    return this.config.verify ? { evidence: { commit: commitFor(this.config.verify.seed, identifier, fence) } } : {};
  }

  /**
   * Works one claim with its token: checkpoint, heartbeat, finish; or silent past the lease; or
   * release. A poison issue kills the agent: it writes nothing and makes no call until the lease
   * has lapsed, then answers "died" (its caller starts a new session).
   */
  async work(claim: Claim): Promise<"died" | void> {
    const { identifier, fence, token } = claim;
    let knownExpiry = Date.parse(claim.expiresAt);
    if (this.config.poisonPrefix && identifier.startsWith(this.config.poisonPrefix)) {
      this.log({ t: "died", agent: this.spec.name, session: this.session, identifier, fence, at: Date.now() });
      await sleep(Math.max(0, knownExpiry - Date.now()) + 300 + (Math.random() * this.config.ttlMs) / 2);
      return "died";
    }
    const share = this.spec.role === "shared";
    if (share) held.set(identifier, { agent: this.spec.name, until: knownExpiry });

    /** A fenced write; false once the lease is gone (refused), so the agent drops the issue. */
    const write = async (kind: WriteKind, tool: string, args: Record<string, unknown>): Promise<boolean> => {
      const sentAt = Date.now();
      const stale = sentAt > knownExpiry;
      // When each attempt went out: a resend's call (and any renewal it made) spans from then to its answer.
      let attemptSentAt = sentAt;
      const final = await this.answered(tool, { identifier, claimToken: token, ...args }, (o, attempt) => {
        this.log({
          t: "write",
          agent: this.spec.name,
          session: this.session,
          kind,
          identifier,
          fence,
          outcome: outcomeOf(o),
          ...alreadyFinished(o),
          // A resend of a stale write is stale too: had the first one landed, that was the violation.
          stale,
          retry: attempt > 0,
          sentAt: attemptSentAt,
          receivedAt: Date.now(),
        });
      }, () => (attemptSentAt = Date.now()));
      if (final.kind !== "ok") return false;
      if (typeof final.value.expiresAt === "string") knownExpiry = Date.parse(final.value.expiresAt);
      if (share) held.set(identifier, { agent: this.spec.name, until: knownExpiry });
      return true;
    };
    const notes = () => {
      this.seq++;
      return { done: `${this.spec.name}:${identifier}:f${fence}:${this.seq}`, next: `finish ${identifier}` };
    };

    try {
      const roll = Math.random();
      if (Math.random() < 0.8 && !(await write("checkpoint", "checkpoint", notes()))) return;
      if (roll < this.config.silentRate) {
        // Silent: no heartbeat past the lease, then every write with the stale token must be refused.
        await sleep(Math.max(0, knownExpiry - Date.now()) + 150 + Math.random() * this.config.ttlMs);
        held.delete(identifier);
        await write("heartbeat", "heartbeat", {});
        await write("checkpoint", "checkpoint", { ...notes(), note: "stale" });
        await write("finish", "save_issue", { status: "done", ...this.evidence(identifier, fence) });
        return;
      }
      if (roll < this.config.silentRate + this.config.releaseRate) {
        await write("release", "release_issue", { note: `released by ${this.spec.name}` });
        return;
      }
      await sleep(Math.random() * 20);
      if (!(await write("heartbeat", "heartbeat", {}))) return;
      await write("finish", "save_issue", { status: "done", ...this.evidence(identifier, fence) });
    } finally {
      if (held.get(identifier)?.agent === this.spec.name) held.delete(identifier);
    }
  }
}

/** Claims a wave with next_batch {claim:true} and hands each token to one of its subagents. */
class Orchestrator extends Session {
  constructor(
    spec: AgentSpec,
    config: AgentProcessConfig,
    private readonly team: Agent[],
  ) {
    super(spec, config);
  }

  run() {
    return this.loop(async () => {
      const args = { n: this.team.length, claim: true };
      let allLanes = false;
      let { outcome, sentAt } = await this.pull("next_batch", args, false);
      if (outcome.kind === "ok" && outcome.value.claims?.length === 0 && outcome.value.otherLanes > 0) {
        allLanes = true;
        ({ outcome, sentAt } = await this.pull("next_batch", args, true));
      }
      const claims: Record<string, any>[] = outcome.kind === "ok" ? (outcome.value.claims ?? []) : [];
      if (claims.length === 0) {
        await sleep(80 + Math.random() * 220);
        return;
      }
      for (const claim of claims) this.logClaim(claim, allLanes, sentAt, true);
      // Silent itself until the wave is done: a silent subagent's lease must lapse, not be kept by these calls.
      const ends = await Promise.all(
        claims.map((c, i) =>
          this.team[i]!.work({ identifier: c.identifier, fence: c.fence, token: c.claimToken, expiresAt: c.expiresAt }).catch((error: unknown) =>
            this.log({ t: "retry", agent: this.team[i]!.spec.name, tool: "loop", reason: reasonOf(error), at: Date.now() }),
          ),
        ),
      );
      // A subagent died on a poison issue this session claimed: it and the subagent come back in new sessions.
      for (const [i, end] of ends.entries()) if (end === "died") await this.team[i]!.die();
      if (ends.includes("died")) await this.die();
    });
  }
}

function notesOf(checkpoint: unknown): CheckpointNotes | null {
  if (!checkpoint || typeof checkpoint !== "object") return null;
  const c = checkpoint as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === "string" ? v : null);
  return { done: text(c.done), next: text(c.next), note: text(c.note), gotchas: text(c.gotchas) };
}

/** The error's code, or its cause's (fetch throws "fetch failed" with ECONNRESET, ECONNREFUSED... as the cause), and its message. */
function reasonOf(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown; cause?: { code?: unknown; cause?: { code?: unknown } } };
  const code = e?.cause?.code ?? e?.cause?.cause?.code ?? e?.code ?? "";
  return `${code} ${String(e?.message ?? error)}`.trim().slice(0, 200);
}

const backoff = (attempt: number) => Math.min(2_000, 50 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random());

const config = JSON.parse(process.env.SWARM_AGENT_CONFIG ?? "null") as AgentProcessConfig | null;
if (!config) {
  process.stderr.write("swarm agent: SWARM_AGENT_CONFIG is not set\n");
  process.exit(2);
}
process.on("SIGTERM", () => process.exit(0));
const teams = new Map<number, Agent[]>();
for (const spec of config.agents) {
  const agent = new Agent(spec, config);
  if (spec.role !== "subagent") void agent.run();
  else teams.set(spec.team!, [...(teams.get(spec.team!) ?? []), agent]);
}
for (const [team, members] of teams) {
  const lead = members[0]!.spec;
  void new Orchestrator({ name: `swarm-orchestrator-${team}`, key: lead.key, userId: lead.userId, role: "subagent", team }, config, members).run();
}
