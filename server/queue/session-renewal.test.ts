import { sql } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { saveIssue } from "../issues/index.ts";
import { TestClock, testConfig, testDriver } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import type { Ctx } from "../context.ts";
import { checkClaim, claimIssue } from "./index.ts";
import { renewalIntervalMs, renewSessionLeases } from "./session-renewal.ts";

/**
 * A session's own calls renew its leases (decision 036), at most once per interval per session in
 * a process, so the usual call costs no statement; only that session's live leases; never by waiting
 * on a row another transaction holds.
 */
const clock = new TestClock();
const TTL_MS = 600_000;
const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: String(TTL_MS / 1000) }) });
const interval = renewalIntervalMs(TTL_MS);
let sessions = 0;
const inSession = (ctx: Ctx): Ctx => ({ ...ctx, principal: { ...ctx.principal, sessionId: `renewal-${++sessions}` } });
const task = (ctx: Ctx, title: string) => saveIssue(ctx, { title, work: true, changeType: "feat", noDependency: "renewal test" });

describe("renewal by a session's calls", () => {
  it("renews the session's due leases in one statement (in its own transaction), then issues none until the interval has passed", async () => {
    const org = await seedOrg(env.services, { prefix: "RNW" });
    const agent = inSession(org.agents.alice.ctx);
    const issue = await task(agent, "held");
    const claim = await claimIssue(agent, { identifier: issue.identifier });

    clock.advance(interval);
    await new Promise((resolve) => setTimeout(resolve, 100)); // the claim's notices, sent after its commit
    const statements = vi.spyOn(agent.db, "transaction");
    expect(await renewSessionLeases(agent)).toBe(1);
    expect(statements).toHaveBeenCalledTimes(1);
    const renewed = await checkClaim(agent, { identifier: issue.identifier });
    expect(Date.parse(renewed.expiresAt!)).toBe(clock.now().getTime() + TTL_MS);
    expect(Date.parse(renewed.expiresAt!)).toBeGreaterThan(Date.parse(claim.expiresAt));
    expect(renewed).toMatchObject({ renewedByYourCalls: true, lastRenewedAt: clock.now().toISOString() });

    clock.advance(interval - 1);
    expect(await renewSessionLeases(agent)).toBe(0);
    expect(statements).toHaveBeenCalledTimes(1);
    statements.mockRestore();
  });

  it("renews only the calling session's live leases: not a sibling session's of the same key, not a lapsed one", async () => {
    const org = await seedOrg(env.services, { prefix: "RNX" });
    const mine = inSession(org.agents.alice.ctx);
    const sibling = inSession(org.agents.alice.ctx);
    const [a, b, c] = [await task(mine, "mine"), await task(mine, "sibling's"), await task(mine, "lapses")];
    await claimIssue(mine, { identifier: a.identifier });
    clock.advance(TTL_MS - interval);
    await claimIssue(mine, { identifier: c.identifier });
    const siblings = await claimIssue(sibling, { identifier: b.identifier });
    clock.advance(interval + 1); // a's lease has lapsed; c's is due
    expect(await renewSessionLeases(mine)).toBe(1);
    expect(await checkClaim(mine, { identifier: c.identifier })).toMatchObject({ status: "held" });
    expect(await checkClaim(mine, { identifier: a.identifier })).toMatchObject({ status: "expired", held: false });
    expect((await checkClaim(sibling, { identifier: b.identifier })).expiresAt).toBe(siblings.expiresAt);
  });

  it("skips a lease whose row another transaction holds instead of waiting for it", async () => {
    const org = await seedOrg(env.services, { prefix: "RNY" });
    const agent = inSession(org.agents.alice.ctx);
    const issue = await task(agent, "busy");
    await claimIssue(agent, { identifier: issue.identifier });
    clock.advance(interval);
    const started = Date.now();
    const renewed = await env.services.db.transaction(async (tx) => {
      await tx.execute(sql`select 1 from issues where identifier = ${issue.identifier} for update`);
      // On PostgreSQL the renewal runs on another connection and must skip the locked row; PGlite has one connection.
      return testDriver === "postgres" ? renewSessionLeases(agent) : null;
    });
    if (testDriver === "postgres") expect(renewed).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("a lease that lapses while the renewal waits for a connection stays lapsed: the clock is read once the statement has one", async () => {
    const org = await seedOrg(env.services, { prefix: "RNC" });
    const agent = inSession(org.agents.alice.ctx);
    const issue = await task(agent, "lapses while the call waits");
    await claimIssue(agent, { identifier: issue.identifier });
    clock.advance(TTL_MS - 1); // due, and live for one more millisecond
    // A pool of one connection, held: the renewal's statement queues for it, as on a busy instance.
    const narrow = await env.tdb.openAnother(1);
    let release!: () => void;
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const busy = narrow.db.transaction(async (tx) => {
      await tx.execute(sql`select 1`);
      holding();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await held;
    const renewal = renewSessionLeases({ ...agent, db: narrow.db });
    clock.advance(2); // the lease lapses while the renewal waits
    release();
    await busy;
    expect(await renewal).toBe(0);
    expect(await checkClaim(agent, { identifier: issue.identifier })).toMatchObject({ status: "expired", held: false });
  });

  it("a caller with no session renews nothing", async () => {
    const org = await seedOrg(env.services, { prefix: "RNZ" });
    expect(await renewSessionLeases(org.agents.alice.ctx)).toBe(0);
  });
});
