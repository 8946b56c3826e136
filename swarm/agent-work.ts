import type { AgentProcessConfig, AgentSpec } from "./agent-spec.ts";
import { commitFor } from "./agent-spec.ts";
import { alreadyFinished, outcomeOf, pick, reasonOf, Session, sleep, type Claim } from "./agent-session.ts";
import type { ProbeRecord, WriteKind } from "./records.ts";

/**
 * What a swarm agent does with its session (swarm/agent.ts starts them): an Agent pulls and works
 * its claims (and, on a shared key, probes its siblings' leases); an Orchestrator claims waves
 * with next_batch for its team of Agents.
 */

/** What this process's shared-key agents hold, and until when they last knew: their siblings' probe targets. */
const held = new Map<string, { agent: string; until: number }>();

export class Agent extends Session {
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
export class Orchestrator extends Session {
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
