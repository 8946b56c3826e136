import fc from "fast-check";
import { expect } from "vitest";
import { saveIssue } from "../../issues/index.ts";
import { checkpoint, claimIssue, heartbeat, nextBatch, nextIssue, releaseIssue, type ClaimReply } from "../index.ts";
import type { Status } from "../reference-ranking.ts";
import type { ModelClaim, ModelEmpty } from "../reference-state.ts";
import { agentArb, attempt, cmd, compare, hasIssues, hasTokens, modelAgent, personArb, pickIssue, sameClaim, sameEmpty, tokenAt } from "./model-harness.ts";

/**
 * The model-based test's commands on dispatch and leases (server/queue/model.test.ts mixes them):
 * next_issue, next_batch and claim_issue, then heartbeat, checkpoint, release and finish with
 * any token an agent ever received, live or stale.
 */

export const nextCmd = fc.record({ agent: agentArb, allLanes: fc.boolean() }).map((p) =>
  cmd(`next_issue(${JSON.stringify(p)})`, async (m, r) => {
    const engine = await attempt(() => nextIssue(r.ctx[p.agent], { allLanes: p.allLanes }));
    const label = `next_issue by ${p.agent}`;
    compare(label, r, m.nextIssue(modelAgent(p.agent), p.allLanes), engine, (mv, ev) => {
      if (mv.identifier === null) {
        expect("claimToken" in ev ? ev.identifier : null, label).toBeNull();
        sameEmpty(label, mv, ev as unknown as ModelEmpty);
      } else {
        expect("claimToken" in ev ? ev.identifier : "nothing", label).toBe(mv.identifier);
        sameClaim(label, r, mv, ev as ClaimReply);
      }
    });
  }),
);

export const batchCmd = fc
  .record({ agent: agentArb, n: fc.integer({ min: 1, max: 4 }), allLanes: fc.boolean(), claim: fc.boolean() })
  .map((p) =>
    cmd(`next_batch(${JSON.stringify(p)})`, async (m, r) => {
      const engine = await attempt(() => nextBatch(r.ctx[p.agent], { n: p.n, allLanes: p.allLanes, claim: p.claim }));
      const label = `next_batch by ${p.agent}`;
      compare(label, r, m.nextBatch(modelAgent(p.agent), p.n, p.allLanes, p.claim), engine, (mv, ev) => {
        const got = ev as { claims?: ClaimReply[]; issues?: { identifier: string }[]; ready?: number; otherLanes?: number };
        const gotIds = (got.claims ?? got.issues ?? []).map((i) => i.identifier);
        if (!Array.isArray(mv)) {
          expect(gotIds, label).toEqual([]);
          sameEmpty(label, mv, got as ModelEmpty);
        } else if (!p.claim) {
          expect(gotIds, label).toEqual(mv);
        } else {
          const claims = mv as ModelClaim[];
          expect(gotIds, label).toEqual(claims.map((c) => c.identifier));
          claims.forEach((c, i) => sameClaim(label, r, c, got.claims![i]!));
        }
      });
    }),
  );

export const claimCmd = fc.record({ agent: agentArb, i: fc.nat(), missing: fc.oneof({ weight: 19, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }) }).map((p) =>
  cmd(
    `claim_issue(${JSON.stringify(p)})`,
    async (m, r) => {
      const issue = p.missing ? `MB-${m.issues.length + 50}` : pickIssue(m, p.i).identifier;
      const engine = await attempt(() => claimIssue(r.ctx[p.agent], { identifier: issue }));
      const label = `claim_issue ${issue} by ${p.agent}`;
      compare(label, r, m.claimIssue(modelAgent(p.agent), issue), engine, (mv, ev) => sameClaim(label, r, mv, ev));
    },
    (m) => p.missing || hasIssues(m),
  ),
);

export const heartbeatCmd = fc.record({ t: fc.nat() }).map((p) =>
  cmd(
    `heartbeat(${JSON.stringify(p)})`,
    async (m, r) => {
      const { token, agent, identifier } = tokenAt(m, p.t);
      const engine = await attempt(() => heartbeat(r.ctx[agent], { identifier, claimToken: r.tokens.get(token)! }));
      compare(`heartbeat ${token}`, r, m.heartbeat(token), engine, (expiresAt, e) => expect(new Date(e.expiresAt).getTime()).toBe(expiresAt));
    },
    hasTokens,
  ),
);

const noteArb = fc.option(fc.constantFrom("parsed input", "wrote tests", "watch the cache", "step 3"), { nil: undefined });
export const checkpointCmd = fc
  .record({
    t: fc.nat(),
    done: noteArb,
    next: noteArb,
    gotchas: noteArb,
    branch: fc.option(fc.constantFrom("feature/a", "fix/b"), { nil: undefined, freq: 3 }),
  })
  .map((p) =>
    cmd(
      `checkpoint(${JSON.stringify(p)})`,
      async (m, r) => {
        const { token, agent, identifier } = tokenAt(m, p.t);
        const notes = { done: p.done, next: p.next, gotchas: p.gotchas, branch: p.branch };
        const engine = await attempt(() => checkpoint(r.ctx[agent], { identifier, claimToken: r.tokens.get(token)!, ...notes }));
        compare(`checkpoint ${token}`, r, m.checkpoint(token, notes), engine, (expiresAt, e) =>
          expect(new Date(e.expiresAt).getTime()).toBe(expiresAt),
        );
      },
      hasTokens,
    ),
  );

export const releaseCmd = fc.record({ t: fc.nat(), note: noteArb }).map((p) =>
  cmd(
    `release(${JSON.stringify(p)})`,
    async (m, r) => {
      const { token, agent, identifier } = tokenAt(m, p.t);
      const engine = await attempt(() => releaseIssue(r.ctx[agent], { identifier, claimToken: r.tokens.get(token)!, note: p.note }));
      compare(`release ${token}`, r, m.release(token, p.note), engine);
    },
    hasTokens,
  ),
);

export const finishCmd = fc
  .record({
    t: fc.nat(),
    to: fc.constantFrom<Status>("done", "done", "review", "review", "todo", "canceled"),
    reviewer: fc.option(personArb, { nil: undefined, freq: 4 }),
    // Mostly sent with a review, sometimes forgotten (HANDOFF_REQUIRED unless a checkpoint says what is done), rarely misplaced.
    handoff: fc.option(fc.constantFrom("built it on its branch", "PR #7, commit 3f2a9c1"), { nil: undefined, freq: 3 }),
  })
  .map((p) =>
    cmd(
      `finish(${JSON.stringify(p)})`,
      async (m, r) => {
        const { token, agent, identifier } = tokenAt(m, p.t);
        const engine = await attempt(() =>
          saveIssue(r.ctx[agent], {
            identifier,
            claimToken: r.tokens.get(token)!,
            status: p.to,
            ...(p.to === "canceled" ? { cancelReason: "not needed" } : {}),
            ...(p.reviewer ? { assignee: r.userOf[p.reviewer] } : {}),
            ...(p.handoff ? { handoff: p.handoff } : {}),
          }),
        );
        const model = m.setStatus(modelAgent(agent), identifier, p.to, {
          token,
          ...(p.reviewer ? { reviewer: p.reviewer } : {}),
          ...(p.handoff ? { handoff: p.handoff } : {}),
        });
        compare(`finish->${p.to} ${token}`, r, model, engine, (_, view) => expect(view.status).toBe(p.to));
      },
      hasTokens,
    ),
  );
