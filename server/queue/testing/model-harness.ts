import fc from "fast-check";
import { eq } from "drizzle-orm";
import { expect } from "vitest";
import { projects } from "../../../db/schema/index.ts";
import type { TestClock } from "../../testing/db.ts";
import type { Ctx, Services } from "../../context.ts";
import { DomainError } from "../../errors.ts";
import { seedOrg } from "../../testing/fixtures.ts";
import type { ClaimReply } from "../index.ts";
import { DispatchModel } from "../reference-model.ts";
import type { ModelAgent, ModelCheckpoint, ModelClaim, ModelEmpty, Outcome } from "../reference-state.ts";

/**
 * The harness of the model-based test (server/queue/model.test.ts): one run's engine side beside
 * the reference model, the comparison of their outcomes, and what the commands
 * (model-issue-commands.ts, model-lease-commands.ts) are made of. Nothing here holds state: the
 * test file's services, clock and counters ride in each run's `Real`.
 */

export const TTL_MS = 60_000;
export const CAP = 2;

export const PEOPLE = ["alice", "bob", "carol"] as const;
export type Person = (typeof PEOPLE)[number];
export const AGENTS = ["a1", "a2", "b1", "c1"] as const;
export type AgentName = (typeof AGENTS)[number];
export const PERSON_OF: Record<AgentName, Person> = { a1: "alice", a2: "alice", b1: "bob", c1: "carol" };

/** How often each operation ended in each outcome, and how many commands ran, to show what the runs exercised. */
export interface ModelStats {
  executed: number;
  tally: Map<string, number>;
}

/** The engine side of one run: an org of its own, an agent context per model agent; the services and clock it runs on. */
export interface Real {
  services: Services;
  clock: TestClock;
  stats: ModelStats;
  orgId: string;
  ctx: Record<AgentName, Ctx>;
  userOf: Record<Person, string>;
  agentOfKey: Map<string, AgentName>;
  /** Model token -> the engine's claim token. */
  tokens: Map<string, string>;
}

export const modelAgent = (name: AgentName): ModelAgent => ({ name, person: PERSON_OF[name], key: name });

export async function setup(services: Services, clock: TestClock, stats: ModelStats): Promise<{ model: DispatchModel; real: Real }> {
  const org = await seedOrg(services, { prefix: "MB" });
  // The reference model has no quarantine (decision 055; server/queue/quarantine.test.ts): random releases and lapses never trip it here.
  await services.db.update(projects).set({ quarantineAfter: 1_000 }).where(eq(projects.id, org.projectId));
  const second = await org.agentFor("alice", "opencode");
  // Each model agent is one agent process: its own key in its own MCP session (decision 036).
  const inSession = (agentCtx: Ctx, sessionId: string): Ctx => ({ ...agentCtx, principal: { ...agentCtx.principal, sessionId } });
  const ctx: Record<AgentName, Ctx> = {
    a1: inSession(org.agents.alice.ctx, "a1"),
    a2: inSession(second.ctx, "a2"),
    b1: inSession(org.agents.bob.ctx, "b1"),
    c1: inSession(org.agents.carol.ctx, "c1"),
  };
  const agentOfKey = new Map(AGENTS.map((name) => [ctx[name].principal.keyId!, name]));
  const real: Real = {
    services,
    clock,
    stats,
    orgId: org.orgId,
    ctx,
    userOf: { alice: org.agents.alice.userId, bob: org.agents.bob.userId, carol: org.agents.carol.userId },
    agentOfKey,
    tokens: new Map(),
  };
  return { model: new DispatchModel("MB", () => clock.now().getTime(), TTL_MS, CAP), real };
}

// --- comparing outcomes

export type Attempt<T> = { ok: true; value: T } | { ok: false; error: DomainError };

export async function attempt<T>(run: () => Promise<T>): Promise<Attempt<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    if (error instanceof DomainError) return { ok: false, error };
    throw error;
  }
}

/** Same success or the same refusal; refusals that name a holder or blockers must name the model's. */
export function compare<M, E>(label: string, real: Real, model: Outcome<M>, engine: Attempt<E>, same?: (m: M, e: E) => void): void {
  const empty = model.ok && (model.value as { identifier?: unknown } | null)?.identifier === null;
  const outcome = `${label.split(" ")[0]} ${model.ok ? (empty ? "empty" : "ok") : model.code}`;
  real.stats.tally.set(outcome, (real.stats.tally.get(outcome) ?? 0) + 1);
  if (!model.ok) {
    expect(engine.ok ? "succeeded" : engine.error.code, `${label}: refusal`).toBe(model.code);
    if (engine.ok) return;
    const details = (engine.error.details ?? {}) as { holder?: { keyId: string | null } | null; openBlockers?: { identifier: string }[] };
    if (model.holder !== undefined) {
      const holder = details.holder?.keyId ? (real.agentOfKey.get(details.holder.keyId) ?? "unknown") : null;
      expect(holder, `${label}: holder named`).toBe(model.holder);
    }
    if (model.blockers) {
      expect((details.openBlockers ?? []).map((b) => b.identifier).sort(), `${label}: blockers named`).toEqual(model.blockers);
    }
    return;
  }
  if (!engine.ok) throw new Error(`${label}: engine refused with ${engine.error.code} (${engine.error.message}); the model succeeded`);
  same?.(model.value, engine.value);
}

const checkpointFields = (c: ModelCheckpoint | null | undefined) =>
  c ? { done: c.done, next: c.next, gotchas: c.gotchas, note: c.note, branch: c.branch } : null;

export function sameClaim(label: string, real: Real, m: ModelClaim, e: ClaimReply) {
  expect(
    {
      identifier: e.identifier,
      fence: e.fence,
      otherClaims: e.otherClaims,
      expiresAt: new Date(e.expiresAt).getTime(),
      branch: e.branch,
      checkpoint: checkpointFields(e.checkpoint),
    },
    label,
  ).toEqual({
    identifier: m.identifier,
    fence: m.fence,
    otherClaims: m.otherClaims,
    expiresAt: m.expiresAt,
    branch: m.branch,
    checkpoint: checkpointFields(m.checkpoint),
  });
  real.tokens.set(m.token, e.claimToken);
}

export function sameEmpty(label: string, m: ModelEmpty, e: { ready: number; otherLanes: number }) {
  expect({ ready: e.ready, otherLanes: e.otherLanes }, label).toEqual({ ready: m.ready, otherLanes: m.otherLanes });
}

// --- what the commands are made of

export type Cmd = fc.AsyncCommand<DispatchModel, Real>;

export function cmd(text: string, run: (m: DispatchModel, r: Real) => Promise<void>, check: (m: DispatchModel) => boolean = () => true): Cmd {
  return {
    check,
    run: (m, r) => {
      r.stats.executed++;
      return run(m, r);
    },
    toString: () => text,
  };
}

export const pickIssue = (m: DispatchModel, pick: number) => m.issues[pick % m.issues.length]!;
export const hasIssues = (m: DispatchModel) => m.issues.length > 0;
/** A token some agent received (live or long stale), and that agent, who presents it. */
export const tokenAt = (m: DispatchModel, pick: number) => {
  const { token, agent } = m.tokens[pick % m.tokens.length]!;
  return { token, agent: agent as AgentName, identifier: token.split("#")[0]! };
};
export const hasTokens = (m: DispatchModel) => m.tokens.length > 0;

/** a1 acts most, so one key often reaches its claim cap. */
export const agentArb = fc.constantFrom<AgentName>("a1", "a1", "a1", "a2", "b1", "c1");
export const personArb = fc.constantFrom(...PEOPLE);
