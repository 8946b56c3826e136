import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { testDriver } from "../testing/db.ts";
import type { Ctx, Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { DomainError } from "../errors.ts";
import { addRelation, removeRelation, saveIssue } from "../issues/index.ts";
import { loadDispatchSnapshot, rankingDrift } from "../testing/dispatch-snapshot.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { checkpoint, heartbeat, nextBatch, nextIssue, releaseIssue, type ClaimReply } from "./index.ts";
import { dispatchCompare, rankAll } from "./reference-ranking.ts";
import { CLAIMERS, DAY, fileRandomDag, leaseHistory, noQuarantine, onPostgres, openTwoPools, protocolViolations, random, sleep, type TwoPools } from "./testing/two-pools.ts";

/**
 * Concurrent drain (the adversarial concurrency suite for dispatch, part one; testing/two-pools.ts
 * says what the parts share): many claimers on two pools, standing for two app instances, drain
 * a random dependency DAG, and churn re-ranks it under racing claims. The races for one issue or
 * one key's cap are in concurrency-races.test.ts, the serial check in concurrency-serial.test.ts.
 */

// 1,000: filing them (creates racing on two pools, every edge a graph lock) took 117 s of a
// 160 s test at 2,000 on CI's 2 CPUs; the drain's 64 claimers meet the same contention at half.
const ISSUES = onPostgres ? 1000 : 200;

let two: TwoPools;
let poolA: Services;
let poolB: Services;
beforeAll(async () => {
  two = await openTwoPools();
  ({ poolA, poolB } = two);
});
afterAll(() => two?.close());

describe("concurrent drain", () => {
  it(`${CLAIMERS} claimers on two pools drain ${ISSUES} issues with a random dependency DAG`, { timeout: 600_000 }, async () => {
    const seed = Date.now() % 1_000_000;
    const rng = random(seed);
    const org = await seedOrg(poolA, { prefix: "DRAIN" });
    await noQuarantine(poolA, org.projectId);
    const people = ["alice", "bob", "carol"] as const;
    const claimers: Ctx[] = [];
    for (let i = 0; i < CLAIMERS; i++) {
      const agent = await org.agentFor(people[i % 3]!, `claimer-${i}`);
      claimers.push(withPrincipal(i % 2 === 0 ? poolA : poolB, agent.principal));
    }
    const filers = [org.agents.alice.ctx, withPrincipal(poolB, org.agents.alice.principal)];

    let started = Date.now();
    const identifiers = await fileRandomDag(filers, rng, ISSUES);
    const createMs = Date.now() - started;

    // The stored ranking equals a from-scratch recomputation, and, since finishing an issue only
    // ever closes issues that gate nothing open, the order of open issues stays fixed during the drain.
    const now = Date.now();
    const snapshot = await loadDispatchSnapshot(poolA.db, org.orgId, now);
    expect(rankingDrift(snapshot, now)).toEqual([]);
    const ranks = rankAll(snapshot.issues, snapshot.blocks, now);
    const order = snapshot.issues.map((i) => ({ ...i, rank: ranks.get(i.key)! })).sort(dispatchCompare);
    const position = new Map(order.map((issue, at) => [issue.identifier, at]));
    const blockersOf = new Map<string, string[]>(identifiers.map((id) => [id, []]));
    for (const [source, target] of snapshot.blocks) blockersOf.get(target)!.push(source);

    // In-process event sequence: a total order of what the test observed (calls and returns).
    let seq = 0;
    const calls: { claimer: number; callAt: number; returnAt: number; identifier: string | null }[] = [];
    const claims = new Map<string, { claimer: number; callAt: number; returnAt: number; fence: number }[]>();
    const finishes = new Map<string, { callAt: number; returnAt: number }[]>();
    const errors: unknown[] = [];
    let finished = 0;
    let lastProgress = Date.now();

    started = Date.now();
    await Promise.all(
      claimers.map(async (ctx, claimer) => {
        const own = random(seed + claimer + 1);
        while (finished < ISSUES && Date.now() - lastProgress < 30_000 && errors.length === 0) {
          try {
            // A quarter of the pulls are next_batch claims of 2-4 mutually independent issues.
            const batch = own.chance(0.25) ? 2 + own.int(3) : 0;
            const callAt = ++seq;
            const got: ClaimReply[] = [];
            if (batch > 0) {
              const reply = await nextBatch(ctx, { n: batch, claim: true });
              got.push(...("claims" in reply ? (reply.claims ?? []) : []));
            } else {
              const reply = await nextIssue(ctx, {});
              if ("claimToken" in reply) got.push(reply);
            }
            const returnAt = ++seq;
            calls.push({ claimer, callAt, returnAt, identifier: got[0]?.identifier ?? null });
            if (got.length === 0) {
              await sleep(2 + own.int(10));
              continue;
            }
            for (const reply of got) {
              claims.set(reply.identifier, [...(claims.get(reply.identifier) ?? []), { claimer, callAt, returnAt, fence: reply.fence }]);
            }
            for (const reply of got) {
              const token = { identifier: reply.identifier, claimToken: reply.claimToken };
              if (own.chance(0.2)) await heartbeat(ctx, token);
              if (own.chance(0.1)) await checkpoint(ctx, { ...token, done: "half", next: "the rest" });
              const finishCall = ++seq;
              await saveIssue(ctx, { ...token, status: "done" });
              finishes.set(reply.identifier, [...(finishes.get(reply.identifier) ?? []), { callAt: finishCall, returnAt: ++seq }]);
              finished++;
              lastProgress = Date.now();
            }
          } catch (error) {
            errors.push(error);
          }
        }
      }),
    );
    const drainMs = Date.now() - started;
    expect(errors).toEqual([]);

    // No lost issue; every issue claimed exactly once and finished once.
    expect(finished).toBe(ISSUES);
    const left = await query<{ status: string; n: number }>(
      poolA.db,
      sql`select status, count(*)::int as n from issues where org_id = ${org.orgId} group by status`,
    );
    expect(left.map((r) => [r.status, Number(r.n)])).toEqual([["done", ISSUES]]);
    expect(identifiers.filter((id) => claims.get(id)?.length !== 1)).toEqual([]);
    expect(identifiers.filter((id) => finishes.get(id)?.length !== 1)).toEqual([]);

    // Never two live holders: one lease per issue, fence 1, ended by its finish; the lease protocol in the log holds.
    const leases = await query<{ identifier: string; n: number; max_fence: number; open: number }>(
      poolA.db,
      sql`select i.identifier, count(l.id)::int as n, max(l.fence)::int as max_fence, count(*) filter (where l.ended_at is null)::int as open
          from issues i left join leases l on l.issue_id = i.id where i.org_id = ${org.orgId} group by i.identifier`,
    );
    expect(leases.filter((l) => Number(l.n) !== 1 || Number(l.max_fence) !== 1 || Number(l.open) !== 0)).toEqual([]);
    const history = await leaseHistory(poolA, org.orgId);
    expect(protocolViolations(history)).toEqual([]);

    // Never a blocked issue handed out: each blocker's finish returned before the claim returned (in-process order),
    // and was logged before the claim (log ids: the finish's log row is written before it commits, the claim's after).
    const lateBlockers: string[] = [];
    for (const id of identifiers) {
      const claim = claims.get(id)![0]!;
      const claimLog = history.get(id)!.find((e) => e.kind === "claimed")!;
      for (const blocker of blockersOf.get(id)!) {
        const finish = finishes.get(blocker)![0]!;
        const finishLog = history.get(blocker)!.find((e) => e.kind === "finished")!;
        if (finish.callAt > claim.returnAt || finishLog.id > claimLog.id) lateBlockers.push(`${id} claimed before ${blocker} was done`);
      }
    }
    expect(lateBlockers).toEqual([]);

    // No claim jumps over more unheld ready issues than there are claims in flight. An issue X ranked above
    // the claimed one was certainly ready and unheld during the claim if all its blockers' finishes returned
    // before the claim was called and X's own claim was called only after this one returned.
    const callStarts = calls.map((c) => c.callAt).sort((a, b) => a - b);
    const callEnds = calls.map((c) => c.returnAt).sort((a, b) => a - b);
    const countBelow = (sorted: number[], value: number) => {
      let lo = 0;
      let hi = sorted.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (sorted[mid]! < value) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    let worstJump = 0;
    let claimsThatJumped = 0;
    const jumpsBeyondInFlight: string[] = [];
    for (const id of identifiers) {
      const claim = claims.get(id)![0]!;
      const inFlight = countBelow(callStarts, claim.returnAt) - countBelow(callEnds, claim.callAt) - 1;
      let jumped = 0;
      for (let at = 0; at < position.get(id)!; at++) {
        const other = order[at]!.identifier;
        if (claims.get(other)![0]!.callAt < claim.returnAt) continue;
        if (blockersOf.get(other)!.every((b) => finishes.get(b)![0]!.returnAt < claim.callAt)) jumped++;
      }
      worstJump = Math.max(worstJump, jumped);
      if (jumped > 0) claimsThatJumped++;
      if (jumped > inFlight) jumpsBeyondInFlight.push(`${id} jumped ${jumped} ready issues with ${inFlight} claims in flight`);
    }
    expect(jumpsBeyondInFlight).toEqual([]);

    console.info(
      `drain (seed ${seed}, ${testDriver}): ${ISSUES} issues, ${snapshot.blocks.length} edges, filed in ${createMs} ms; ` +
        `${CLAIMERS} claimers drained them in ${drainMs} ms (${Math.round((ISSUES * 1000) / drainMs)} claim+finish/s), ` +
        `${calls.length} next_issue/next_batch calls (${calls.filter((c) => c.identifier === null).length} empty); claims that passed a ready issue: ${claimsThatJumped}, worst ${worstJump}`,
    );
  });

  it("re-ranking racing claims on two pools keeps the stored order exact", { timeout: 300_000 }, async () => {
    const seed = Date.now() % 1_000_000;
    const rng = random(seed);
    const org = await seedOrg(poolA, { prefix: "CHURN" });
    await noQuarantine(poolA, org.projectId);
    const onA = org.agents.alice.ctx;
    const onB = withPrincipal(poolB, org.agents.bob.principal);
    const identifiers = await fileRandomDag([onA, onB], rng, onPostgres ? 400 : 120);
    const claimers: Ctx[] = [];
    for (let i = 0; i < (onPostgres ? 16 : 4); i++) {
      claimers.push(withPrincipal(i % 2 ? poolA : poolB, (await org.agentFor((["alice", "bob", "carol"] as const)[i % 3]!, `churn-${i}`)).principal));
    }
    const expected = new Set(["CYCLE", "ALREADY_CLAIMED", "INVALID_INPUT"]);
    const unexpected: unknown[] = [];
    const tolerate = (error: unknown) => {
      if (!(error instanceof DomainError && expected.has(error.code))) unexpected.push(error);
    };
    // A churn writer may cancel the issue under a claim, or after another writer canceled it (an
    // agent's repeated finish that was not its own is STALE_CLAIM): either way it ended canceled.
    const canceledAlready = (error: unknown) => error instanceof DomainError && error.code === "STALE_CLAIM" && error.details?.status === "canceled";
    let writes = onPostgres ? 600 : 150;
    const writers = Array.from({ length: onPostgres ? 8 : 2 }, async (_, w) => {
      const ctx = w % 2 ? onA : onB;
      const own = random(seed + 100 + w);
      const any = () => identifiers[own.int(identifiers.length)]!;
      while (writes-- > 0 && unexpected.length === 0) {
        const roll = own.next();
        const target = any();
        const change =
          roll < 0.3
            ? saveIssue(ctx, { identifier: target, priority: own.int(5) })
            : roll < 0.45
              ? saveIssue(ctx, { identifier: target, dueAt: own.chance(0.3) ? Date.now() - DAY : own.chance(0.3) ? null : Date.now() + 3 * DAY })
              : roll < 0.75
                ? addRelation(ctx, { sourceId: any(), targetId: target, type: own.chance(0.5) ? "blocks" : "blocked_by" })
                : roll < 0.95
                  ? removeRelation(ctx, { sourceId: any(), targetId: target, type: "blocks" })
                  : saveIssue(ctx, { identifier: target, status: "canceled", cancelReason: "churn" }).catch((error: unknown) => {
                      if (!canceledAlready(error)) throw error;
                    });
        await change.catch(tolerate);
      }
    });
    let writing = true;
    let claimed = 0;
    const pullers = claimers.map(async (ctx, c) => {
      const own = random(seed + c + 1);
      while (writing && unexpected.length === 0) {
        const reply = await nextIssue(ctx, {}).catch((error: unknown) => (unexpected.push(error), null));
        if (!reply || !("claimToken" in reply)) {
          await sleep(3 + own.int(10));
          continue;
        }
        claimed++;
        const token = { identifier: reply.identifier, claimToken: reply.claimToken };
        await (own.chance(0.7) ? saveIssue(ctx, { ...token, status: "done" }) : releaseIssue(ctx, token)).catch((error: unknown) => {
          if (!canceledAlready(error)) unexpected.push(error);
        });
      }
    });
    await Promise.all(writers);
    writing = false;
    await Promise.all(pullers);
    expect(unexpected).toEqual([]);
    const now = Date.now();
    const snapshot = await loadDispatchSnapshot(poolA.db, org.orgId, now);
    expect(rankingDrift(snapshot, now), `seed ${seed}`).toEqual([]);
    expect(protocolViolations(await leaseHistory(poolA, org.orgId))).toEqual([]);
    console.info(`churn (seed ${seed}, ${testDriver}): ${snapshot.issues.length} issues, ${snapshot.blocks.length} edges at the end, ${claimed} claims`);
  });
});
