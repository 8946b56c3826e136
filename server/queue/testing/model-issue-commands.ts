import fc from "fast-check";
import { expect } from "vitest";
import { addRelation, removeRelation, saveIssue } from "../../issues/index.ts";
import { loadDispatchSnapshot, rankingDrift } from "../../testing/dispatch-snapshot.ts";
import { reclaimSweep, slaSweep } from "../index.ts";
import { isClosed, type Status } from "../reference-ranking.ts";
import type { RelationKind } from "../reference-state.ts";
import { agentArb, attempt, cmd, compare, hasIssues, modelAgent, personArb, pickIssue } from "./model-harness.ts";

/**
 * The model-based test's commands on issues and time (server/queue/model.test.ts mixes them):
 * issue writes, relations, status changes without a claim, clock moves to the thresholds, and
 * the sweeps with a check of every stored ranking column.
 */

export const createCmd = fc
  .record({
    by: agentArb,
    work: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    priority: fc.integer({ min: 0, max: 4 }),
    blockers: fc.oneof(
      { weight: 3, arbitrary: fc.constant<number[]>([]) },
      { weight: 2, arbitrary: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }) },
    ),
    assignee: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 2, arbitrary: personArb }),
    dueInMs: fc.option(fc.integer({ min: 30_000, max: 30 * 60_000 }), { nil: null, freq: 2 }),
    flagged: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  })
  .map((p) =>
    cmd(`create(${JSON.stringify(p)})`, async (m, r) => {
      const blockedBy = m.issues.length === 0 ? [] : p.blockers.map((b) => pickIssue(m, b).identifier);
      const title = `work item ${m.issues.length + 1}`;
      const dueAt = p.dueInMs === null ? null : r.clock.now().getTime() + p.dueInMs;
      const status = p.flagged ? "blocked" : "todo";
      const engine = await attempt(() =>
        saveIssue(r.ctx[p.by], {
          title,
          work: p.work,
          changeType: "feat",
          priority: p.priority,
          ...(blockedBy.length > 0 ? { blockedBy } : { noDependency: "independent" }),
          ...(p.assignee ? { assignee: r.userOf[p.assignee] } : {}),
          ...(dueAt !== null ? { dueAt } : {}),
          status,
        }),
      );
      const model = m.create({ title, work: p.work, priority: p.priority, blockedBy, assignee: p.assignee, dueAt, status });
      compare("create", r, model, engine, (identifier, view) => expect(view.identifier).toBe(identifier));
    }),
  );

const relationKinds: RelationKind[] = ["blocks", "blocked_by", "related", "duplicate"];
export const relateCmd = fc
  .record({ a: fc.nat(), b: fc.nat(), kind: fc.constantFrom(...relationKinds), remove: fc.boolean() })
  .map((p) =>
    cmd(
      `${p.remove ? "unrelate" : "relate"}(${JSON.stringify(p)})`,
      async (m, r) => {
        const a = pickIssue(m, p.a).identifier;
        const b = pickIssue(m, p.b).identifier;
        const input = { sourceId: a, targetId: b, type: p.kind };
        if (p.remove) {
          const engine = await attempt(() => removeRelation(r.ctx.a1, input));
          compare(`unrelate ${a} ${p.kind} ${b}`, r, m.unrelate(a, b, p.kind), engine, (removed, e) => expect(e.removed).toBe(removed));
        } else {
          const engine = await attempt(() => addRelation(r.ctx.b1, input));
          compare(`relate ${a} ${p.kind} ${b}`, r, m.relate(a, b, p.kind), engine, (added, e) => expect(e.added).toBe(added));
        }
      },
      hasIssues,
    ),
  );

export const priorityCmd = fc.record({ i: fc.nat(), priority: fc.integer({ min: 0, max: 4 }) }).map((p) =>
  cmd(
    `priority(${JSON.stringify(p)})`,
    async (m, r) => {
      const issue = pickIssue(m, p.i).identifier;
      const engine = await attempt(() => saveIssue(r.ctx.c1, { identifier: issue, priority: p.priority }));
      compare(`priority ${issue}`, r, m.setPriority(issue, p.priority), engine);
    },
    hasIssues,
  ),
);

export const dueCmd = fc
  .record({ i: fc.nat(), inMs: fc.option(fc.integer({ min: -60_000, max: 20 * 60_000 }), { nil: null, freq: 4 }) })
  .map((p) =>
    cmd(
      `due(${JSON.stringify(p)})`,
      async (m, r) => {
        const issue = pickIssue(m, p.i).identifier;
        const dueAt = p.inMs === null ? null : r.clock.now().getTime() + p.inMs;
        const engine = await attempt(() => saveIssue(r.ctx.a2, { identifier: issue, dueAt }));
        compare(`due ${issue}`, r, m.setDue(issue, dueAt), engine);
      },
      hasIssues,
    ),
  );

export const statusCmd = fc
  .record({
    agent: agentArb,
    i: fc.nat(),
    to: fc.constantFrom<Status>("todo", "doing", "blocked", "blocked", "done", "canceled", "review"),
    reviewer: personArb,
  })
  .map((p) =>
    cmd(
      `status(${JSON.stringify(p)})`,
      async (m, r) => {
        const identifier = pickIssue(m, p.i).identifier;
        const engine = await attempt(() =>
          saveIssue(r.ctx[p.agent], {
            identifier,
            status: p.to,
            ...(p.to === "canceled" ? { cancelReason: "dropped" } : {}),
            ...(p.to === "review" ? { assignee: r.userOf[p.reviewer] } : {}),
          }),
        );
        const model = m.setStatus(modelAgent(p.agent), identifier, p.to, p.to === "review" ? { reviewer: p.reviewer } : {});
        compare(`status->${p.to} ${identifier} by ${p.agent}`, r, model, engine, (_, view) => expect(view.status).toBe(p.to));
      },
      hasIssues,
    ),
  );

export const clockCmd = fc.integer({ min: 1_000, max: 120_000 }).map((ms) =>
  cmd(`advance(${ms})`, async (_m, r) => {
    r.clock.advance(ms);
  }),
);

/** Moves the clock to the exact instant (or 1 ms before) an SLA threshold, a review age threshold or a lease expiry of an issue. */
export const boundaryCmd = fc
  .record({ i: fc.nat(), which: fc.constantFrom("warning", "breaching", "due", "lease", "reviewUrgent", "reviewDay"), early: fc.boolean() })
  .map((p) =>
    cmd(
      `boundary(${JSON.stringify(p)})`,
      async (m, r) => {
        const issue = pickIssue(m, p.i);
        let at: number | null = null;
        if (p.which === "lease") at = issue.lease?.expiresAt ?? null;
        // A review's age: urgent once 90% of a day has passed since it entered review, above urgent past the day.
        else if (p.which === "reviewUrgent" || p.which === "reviewDay") {
          at = issue.status === "review" && issue.reviewSince !== null ? issue.reviewSince + (p.which === "reviewDay" ? 86_400_000 : 77_760_000) : null;
        } else if (issue.dueAt !== null && issue.windowStart !== null) {
          const start = Math.min(issue.windowStart, issue.dueAt);
          const window = issue.dueAt - start;
          // The first whole millisecond at which 75% / 90% of the window has passed.
          at =
            p.which === "warning"
              ? start + Math.ceil((3 * window) / 4)
              : p.which === "breaching"
                ? start + Math.ceil((9 * window) / 10)
                : issue.dueAt;
        }
        if (at === null) return;
        const target = at - (p.early ? 1 : 0);
        if (target > r.clock.now().getTime()) r.clock.set(new Date(target));
      },
      hasIssues,
    ),
  );

/** The sweeps, then every stored ranking column and every lease against the model. */
export const sweepCmd = fc.constant(
  cmd("sweep", async (m, r) => {
    await slaSweep(r.services);
    await reclaimSweep(r.services);
    const now = r.clock.now().getTime();
    const snapshot = await loadDispatchSnapshot(r.services.db, r.orgId, now);
    expect(rankingDrift(snapshot, now), "stored ranking vs recomputation").toEqual([]);
    const ranks = m.ranks();
    for (const issue of m.issues) {
      const stored = snapshot.byIdentifier.get(issue.identifier)!;
      expect({ status: stored.status, live: stored.leaseLive, level: isClosed(stored.status) ? null : stored.stored.level }, issue.identifier).toEqual({
        status: issue.status,
        live: issue.lease !== null && issue.lease.expiresAt > now,
        level: isClosed(issue.status) ? null : ranks.get(issue.identifier)!.level,
      });
    }
  }),
);
