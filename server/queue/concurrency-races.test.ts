import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { TestClock, testDriver } from "../testing/db.ts";
import { systemClock, type Ctx, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { DomainError } from "../errors.ts";
import { saveIssue } from "../issues/index.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { checkpoint, claimIssue, heartbeat, nextIssue, reclaimSweep, releaseIssue } from "./index.ts";
import { CLAIMERS, fileRandomDag, leaseHistory, noQuarantine, onPostgres, openTwoPools, protocolViolations, random, refusal, sleep, type TwoPools } from "./testing/two-pools.ts";

/**
 * Races for one issue, one key's cap and an expired lease (the adversarial concurrency suite for
 * dispatch, part two; testing/two-pools.ts says what the parts share): agents on two pools,
 * standing for two app instances, claim at once; exactly one wins each issue, a key gets exactly
 * its cap, and writes under a superseded token are refused and change nothing.
 */

let two: TwoPools;
let poolA: Services;
let poolB: Services;
beforeAll(async () => {
  two = await openTwoPools();
  ({ poolA, poolB } = two);
});
afterAll(() => two?.close());

describe("concurrent drain", () => {
  it("racing claim_issue on the same issues: exactly one winner each, the rest refused naming the winner", async () => {
    const org = await seedOrg(poolA, { prefix: "RACE" });
    await noQuarantine(poolA, org.projectId);
    const open = await fileRandomDag([org.agents.alice.ctx], random(7), 8); // one wave: no blockers
    const agents: Ctx[] = [];
    for (let i = 0; i < CLAIMERS; i++) {
      const agent = await org.agentFor((["alice", "bob", "carol"] as const)[i % 3]!, `racer-${i}`);
      agents.push(withPrincipal(i % 2 === 0 ? poolA : poolB, agent.principal));
    }
    const results = await Promise.all(
      agents.map(async (ctx, i) => {
        const identifier = open[i % open.length]!;
        try {
          await claimIssue(ctx, { identifier });
          return { identifier, winner: ctx.principal.keyId, code: null, holder: null };
        } catch (error) {
          return { identifier, winner: null, ...refusal(error) };
        }
      }),
    );
    for (const identifier of open) {
      const mine = results.filter((r) => r.identifier === identifier);
      const winners = mine.filter((r) => r.winner);
      expect(winners, `claim exclusivity (claim_issue): one winner for ${identifier}`).toHaveLength(1);
      // Why each loser lost: the winner's row lock, seen as ALREADY_CLAIMED naming it. Without the
      // lock, losers get past the check and die on the leases' unique index instead: caught here.
      for (const loser of mine.filter((r) => !r.winner)) {
        expect(loser, `claim exclusivity (claim_issue): a loser of ${identifier} is refused naming the winner`).toEqual({
          identifier,
          winner: null,
          code: "ALREADY_CLAIMED",
          holder: winners[0]!.winner,
        });
      }
    }
  });

  it("one key making 16 claims at once over two pools gets exactly its cap; the others are refused CLAIM_CAP", async () => {
    const CAP = 7;
    const [a, b] = two.pools(systemClock, { LEASE_TTL_SECONDS: "600", CLAIM_CAP_DEFAULT: String(CAP) });
    const org = await seedOrg(a, { prefix: "CAP" });
    await noQuarantine(a, org.projectId);
    // Half name one of carol's issues (claim_issue), half ask for the next in bob's lane, the
    // unassigned ones (next_issue's SQL): both count the key's claims under its lock, and never meet.
    const named: string[] = [];
    for (let i = 0; i < 16; i++) {
      const assignee = i % 2 ? { assignee: org.agents.carol.userId } : {};
      const { identifier } = await saveIssue(org.agents.alice.ctx, { title: `capped ${i}`, work: true, changeType: "feat", noDependency: "alone", ...assignee });
      if (i % 2) named.push(identifier);
    }
    const key = (await org.agentFor("bob", "capped")).principal;
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const ctx = withPrincipal(i % 2 ? a : b, key);
        try {
          const claim = i % 4 < 2 ? await claimIssue(ctx, { identifier: named[(i >> 2) * 2 + (i % 4)]! }) : await nextIssue(ctx, {});
          return "claimToken" in claim ? { code: "WON" } : { code: "EMPTY" };
        } catch (error) {
          return refusal(error);
        }
      }),
    );
    const won = results.filter((r) => r.code === "WON").length;
    expect(won, "the per-key claim cap under concurrency: exactly the cap won").toBe(CAP);
    expect(results.filter((r) => r.code !== "WON"), "the per-key claim cap under concurrency: every other claim refused CLAIM_CAP").toEqual(
      Array.from({ length: 16 - CAP }, () => ({ code: "CLAIM_CAP", holder: null })),
    );
    const [live] = await query<{ n: number }>(a.db, sql`select count(*)::int as n from leases where key_id = ${key.keyId} and ended_at is null`);
    expect(Number(live!.n), "the per-key claim cap under concurrency: live leases of the key").toBe(CAP);
    console.info(`claim cap race (${testDriver}): 16 claims of one key, ${won} won, ${Date.now() - started} ms`);
  });
});

describe("fencing under concurrency", () => {
  it("after expiry and reclaim, racing writes with old tokens are all refused with STALE_CLAIM and change nothing", async () => {
    const clock = new TestClock();
    const [a, b] = two.pools(clock, { LEASE_TTL_SECONDS: "60" });
    const org = await seedOrg(a, { prefix: "FENCE" });
    await noQuarantine(a, org.projectId);
    const count = onPostgres ? 32 : 8;
    const identifiers: string[] = [];
    for (let i = 0; i < count; i++) identifiers.push((await saveIssue(org.agents.alice.ctx, { title: `fenced ${i}`, work: true, changeType: "feat", noDependency: "alone" })).identifier);
    const agent = async (who: "alice" | "bob" | "carol", runtime: string, services: Services) =>
      withPrincipal(services, (await org.agentFor(who, runtime)).principal);
    const olds: { ctx: Ctx; token: string; identifier: string }[] = [];
    const news: Ctx[] = [];
    for (let i = 0; i < count; i++) {
      const ctx = await agent("alice", `old-${i}`, i % 2 ? a : b);
      const claim = await claimIssue(ctx, { identifier: identifiers[i]! });
      await checkpoint(ctx, { identifier: identifiers[i]!, claimToken: claim.claimToken, done: "old work", next: "finish it" });
      olds.push({ ctx, token: claim.claimToken, identifier: identifiers[i]! });
      news.push(await agent(i % 2 ? "bob" : "carol", `new-${i}`, i % 2 ? b : a));
    }
    clock.advance(61_000);

    const holderOf = new Map<string, string>();
    const staleWrites = (round: string) =>
      olds.flatMap(({ ctx, token, identifier }) => {
        const stale = { identifier, claimToken: token };
        return [
          () => heartbeat(ctx, stale),
          () => checkpoint(ctx, { ...stale, done: `late ${round}` }),
          () => releaseIssue(ctx, { ...stale, note: `late ${round}` }),
          () => saveIssue(ctx, { ...stale, status: "done" }),
          () => saveIssue(ctx, { ...stale, status: "review", assignee: org.agents.bob.userId }),
          () => saveIssue(ctx, { ...stale, status: "canceled", cancelReason: "late" }),
        ].map((write) => ({ identifier, write }));
      });
    const refusals: { identifier: string; code: string; holder: string | null }[] = [];
    const runStale = (writes: ReturnType<typeof staleWrites>) =>
      writes.map(({ identifier, write }) =>
        write().then(
          () => refusals.push({ identifier, code: "ACCEPTED", holder: null }),
          (error: unknown) => {
            if (!(error instanceof DomainError)) throw error;
            const holder = (error.details as { holder?: { keyId: string } | null }).holder?.keyId ?? null;
            refusals.push({ identifier, code: error.code, holder });
          },
        ),
      );

    // Round 1: two reclaim sweeps (one per instance), the new agents' claims and every stale write, all at once.
    const newClaims: Record<string, string> = {};
    await Promise.all([
      reclaimSweep(a),
      reclaimSweep(b),
      ...news.map(async (ctx) => {
        // Rows locked by a racing stale write or sweep are skipped; ask again until one is handed out.
        let claim = await nextIssue(ctx, {});
        for (let tries = 0; !("claimToken" in claim) && tries < 100; tries++) {
          await sleep(5);
          claim = await nextIssue(ctx, {});
        }
        if ("claimToken" in claim) {
          newClaims[claim.identifier] = claim.claimToken;
          holderOf.set(claim.identifier, ctx.principal.keyId!);
          expect(claim.fence).toBe(2);
          expect(claim.checkpoint).toMatchObject({ done: "old work", next: "finish it" });
        }
        return null;
      }),
      ...runStale(staleWrites("1")),
    ]);
    expect(Object.keys(newClaims).sort()).toEqual([...identifiers].sort());
    for (const r of refusals) {
      expect(r.code).toBe("STALE_CLAIM");
      expect([null, holderOf.get(r.identifier)]).toContain(r.holder);
    }

    // Round 2: while the new agents hold and heartbeat, stale writes name exactly the new holder.
    refusals.length = 0;
    await Promise.all([
      ...news.map(async (ctx) => {
        const identifier = [...holderOf].find(([, key]) => key === ctx.principal.keyId)![0];
        await heartbeat(ctx, { identifier, claimToken: newClaims[identifier]! });
      }),
      ...runStale(staleWrites("2")),
    ]);
    for (const r of refusals) expect(r).toEqual({ identifier: r.identifier, code: "STALE_CLAIM", holder: holderOf.get(r.identifier) });

    // Round 3: the new holders finish while the superseded agents race their late finishes.
    refusals.length = 0;
    await Promise.all([
      ...news.map(async (ctx) => {
        const identifier = [...holderOf].find(([, key]) => key === ctx.principal.keyId)![0];
        await saveIssue(ctx, { identifier, claimToken: newClaims[identifier]!, status: "done" });
      }),
      ...runStale(staleWrites("3")),
    ]);
    for (const r of refusals) {
      expect(r.code).toBe("STALE_CLAIM");
      expect([null, holderOf.get(r.identifier)]).toContain(r.holder);
    }

    // Nothing the old agents did after expiry took effect.
    const history = await leaseHistory(a, org.orgId);
    expect(protocolViolations(history)).toEqual([]);
    for (const identifier of identifiers) {
      const events = history.get(identifier)!;
      expect(events.filter((e) => e.kind === "reclaimed"), `${identifier}: reclaim recorded once`).toHaveLength(1);
      const afterExpiry = events.slice(events.findIndex((e) => e.kind === "reclaimed"));
      expect(afterExpiry.filter((e) => e.fence === 1 && e.kind !== "reclaimed"), identifier).toEqual([]);
      expect(events.filter((e) => e.kind === "finished").map((e) => [e.fence, e.keyId])).toEqual([[2, holderOf.get(identifier)]]);
    }
    const written = await query<{ n: number }>(
      a.db,
      sql`select count(*)::int as n from checkpoints c join issues i on i.id = c.issue_id where i.org_id = ${org.orgId}`,
    );
    expect(Number(written[0]!.n), "only the checkpoints written before expiry").toBe(count);
    const final = await query<{ status: string; fence: number; lease_id: string | null }>(
      a.db,
      sql`select status, fence, lease_id from issues where org_id = ${org.orgId}`,
    );
    expect(final.every((row) => row.status === "done" && Number(row.fence) === 2 && row.lease_id === null)).toBe(true);
  });

  it("a racing crowd re-claims expired issues: one winner per issue, the reclaim recorded once", async () => {
    const clock = new TestClock();
    const [a, b] = two.pools(clock, { LEASE_TTL_SECONDS: "60" });
    const org = await seedOrg(a, { prefix: "CROWD" });
    await noQuarantine(a, org.projectId);
    const identifiers: string[] = [];
    for (let i = 0; i < 8; i++) {
      const issue = await saveIssue(org.agents.alice.ctx, { title: `contested ${i}`, work: true, changeType: "feat", noDependency: "alone" });
      await claimIssue(i % 2 ? org.agents.alice.ctx : org.agents.carol.ctx, { identifier: issue.identifier });
      identifiers.push(issue.identifier);
    }
    clock.advance(60_000); // exactly at expiry: no longer live
    const crowd: Ctx[] = [];
    for (let i = 0; i < CLAIMERS; i++) crowd.push(withPrincipal(i % 2 ? a : b, (await org.agentFor("bob", `crowd-${i}`)).principal));
    const outcomes = await Promise.all([
      reclaimSweep(a).then(() => null),
      reclaimSweep(b).then(() => null),
      ...crowd.map((ctx, i) =>
        claimIssue(ctx, { identifier: identifiers[i % identifiers.length]! }).then(
          (claim) => ({ identifier: claim.identifier, fence: claim.fence, code: "WON" }),
          (error: unknown) => {
            if (!(error instanceof DomainError)) throw error;
            return { identifier: identifiers[i % identifiers.length]!, fence: 0, code: error.code };
          },
        ),
      ),
    ]);
    const claims = outcomes.filter((o): o is { identifier: string; fence: number; code: string } => o !== null);
    for (const identifier of identifiers) {
      const won = claims.filter((c) => c.identifier === identifier && c.code === "WON");
      expect(won.map((c) => c.fence), identifier).toEqual([2]);
      expect(claims.filter((c) => c.identifier === identifier && c.code !== "WON").every((c) => c.code === "ALREADY_CLAIMED")).toBe(true);
    }
    const history = await leaseHistory(a, org.orgId);
    expect(protocolViolations(history)).toEqual([]);
    for (const identifier of identifiers) {
      expect(history.get(identifier)!.map((e) => `${e.kind}:${e.fence}`), identifier).toEqual(["claimed:1", "reclaimed:1", "claimed:2"]);
    }
  });
});
