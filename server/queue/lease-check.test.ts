import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { saveIssue } from "../issues/index.ts";
import { TestClock, testConfig } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import type { Ctx } from "../context.ts";
import { claimIssue, heartbeat, nextIssue } from "./index.ts";
import { renewByHeartbeat } from "./lease.ts";
import { reclaimSweep } from "./reclaim.ts";
import { renewSessionLeases } from "./session-renewal.ts";

/**
 * The dispatch indexes read lease_check_at, never lease_expires_at, so a renewal is a HOT update
 * (decision 097). lease_check_at is null exactly when the expiry is, never after it, and a renewal
 * moves it only once it is within half a lease of now: a lease renewed in time is never read as
 * lapsed, and one that lapsed is picked whatever lease_check_at says.
 *
 * The rule compares with the database's clock, so this file's clock starts at the real time.
 */
const TTL_MS = 60_000;
const clock = new TestClock(Date.now());
const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: String(TTL_MS / 1000) }) });

async function leaseRowOf(orgId: string, identifier: string) {
  const [row] = await query<{ check: string; expires: string }>(
    env.services.db,
    sql`select l.check_at::text as check, l.expires_at::text as expires from leases l join issues i on l.id = i.lease_id
        where i.org_id = ${orgId} and i.identifier = ${identifier}`,
  );
  return { check: new Date(row!.check).getTime(), expires: new Date(row!.expires).getTime() };
}

async function leaseOf(orgId: string, identifier: string) {
  const [row] = await query<{ check: string | null; expires: string | null }>(
    env.services.db,
    sql`select lease_check_at::text as check, lease_expires_at::text as expires from issues where org_id = ${orgId} and identifier = ${identifier}`,
  );
  return { check: row!.check && new Date(row!.check).getTime(), expires: row!.expires && new Date(row!.expires).getTime() };
}

describe("lease_check_at, what the dispatch indexes read of a lease", () => {
  it("no index of issues names lease_expires_at, so a renewal can be HOT", async () => {
    const rows = await query<{ name: string }>(
      env.services.db,
      sql`select indexrelid::regclass::text as name from pg_index where indrelid = 'issues'::regclass and pg_get_indexdef(indexrelid) like '%lease_expires_at%'`,
    );
    expect(rows.map((r) => r.name)).toEqual([]);
  });

  it("is set with the lease, kept by a renewal far from it, never after the expiry, and a lease lapses exactly at its expiry", async () => {
    const org = await seedOrg(env.services);
    const { alice, bob } = org.agents;
    const issue = await saveIssue(alice.ctx, { title: "Held", work: true, changeType: "feat", noDependency: "none" });
    const start = clock.now().getTime();
    const claim = await nextIssue(alice.ctx, {});
    if (!("claimToken" in claim)) throw new Error("nothing claimed");
    const claimed = await leaseOf(org.orgId, issue.identifier);
    expect(claimed.check).toBe(claimed.expires);
    expect(claimed.expires).toBe(start + TTL_MS);

    // Renewed a second later: the expiry moves, lease_check_at (more than half a lease away) does not.
    clock.advance(1_000);
    await heartbeat(alice.ctx, { identifier: issue.identifier, claimToken: claim.claimToken });
    const renewed = await leaseOf(org.orgId, issue.identifier);
    expect(renewed.expires).toBe(start + 1_000 + TTL_MS);
    expect(renewed.check).toBe(claimed.check);

    // Past lease_check_at, before the expiry: still held, for the pick and the wave alike.
    clock.set(new Date(start + TTL_MS + 500));
    expect(await nextIssue(bob.ctx, {})).toMatchObject({ claimed: false });
    // Past the expiry: lapsed, and picked.
    clock.set(new Date(start + TTL_MS + 1_500));
    expect(await nextIssue(bob.ctx, {})).toMatchObject({ identifier: issue.identifier });
    const retaken = await leaseOf(org.orgId, issue.identifier);
    expect(retaken.check).toBe(retaken.expires);
  });

  it("leases.check_at likewise: kept by a renewal, and the reclaim sweep records a lease only once it has lapsed", async () => {
    const org = await seedOrg(env.services);
    const { alice } = org.agents;
    const issue = await saveIssue(alice.ctx, { title: "Swept", work: true, changeType: "feat", noDependency: "none" });
    const start = clock.now().getTime();
    const claim = await nextIssue(alice.ctx, {});
    if (!("claimToken" in claim)) throw new Error("nothing claimed");
    const claimed = await leaseRowOf(org.orgId, issue.identifier);
    expect(claimed.check).toBe(claimed.expires);
    clock.advance(1_000);
    await heartbeat(alice.ctx, { identifier: issue.identifier, claimToken: claim.claimToken });
    const renewed = await leaseRowOf(org.orgId, issue.identifier);
    expect(renewed).toEqual({ check: claimed.check, expires: start + 1_000 + TTL_MS });
    const leaseId = (await query<{ id: string }>(env.services.db, sql`select lease_id as id from issues where org_id = ${org.orgId} and identifier = ${issue.identifier}`))[0]!.id;
    const ended = async () =>
      (await query<{ reason: string | null }>(env.services.db, sql`select end_reason as reason from leases where id = ${leaseId}`))[0]!.reason;
    // Other tests' leases lapse on this clock too: this lease's own end is what is read.
    clock.set(new Date(start + TTL_MS + 500));
    await reclaimSweep(env.services);
    expect(await ended()).toBeNull();
    clock.set(new Date(start + TTL_MS + 1_500));
    await reclaimSweep(env.services);
    expect(await ended()).toBe("expired");
  });

  it("leases.check_at on each renewal path: kept within half a lease of now, then moved to the new expiry; no update trigger locks a lease first", async () => {
    // The rule reads the database's clock: this test's clock starts at it again (the tests above moved it on).
    clock.set(new Date());
    const org = await seedOrg(env.services);
    const agent: Ctx = { ...org.agents.alice.ctx, principal: { ...org.agents.alice.ctx.principal, sessionId: "lease-check-session" } };
    const task = (title: string) => saveIssue(agent, { title, work: true, changeType: "feat", noDependency: "none" });
    const [held, general, session] = [await task("by token"), await task("general path"), await task("by its session's calls")];
    const start = clock.now().getTime();
    const claims = {
      held: await claimIssue(agent, { identifier: held.identifier }),
      general: await claimIssue(agent, { identifier: general.identifier }),
    };
    await claimIssue(agent, { identifier: session.identifier });
    const first = await leaseRowOf(org.orgId, held.identifier);
    expect(first.check).toBe(first.expires);

    // A second later (and 20 s for the session's calls): the expiry moves, check_at does not.
    clock.set(new Date(start + 1_000));
    await heartbeat(agent, { identifier: held.identifier, claimToken: claims.held.claimToken });
    await renewByHeartbeat(agent, { identifier: general.identifier, claimToken: claims.general.claimToken });
    clock.set(new Date(start + 20_000));
    expect(await renewSessionLeases(agent)).toBe(1);
    for (const [identifier, at] of [[held.identifier, 1_000], [general.identifier, 1_000], [session.identifier, 20_000]] as const) {
      const row = await leaseRowOf(org.orgId, identifier);
      expect(row, identifier).toEqual({ check: first.check, expires: start + at + TTL_MS });
    }

    // Within half a lease of the database's now: each path moves it to the new expiry.
    clock.set(new Date(first.check + 500));
    await heartbeat(agent, { identifier: held.identifier, claimToken: claims.held.claimToken });
    await renewByHeartbeat(agent, { identifier: general.identifier, claimToken: claims.general.claimToken });
    expect(await renewSessionLeases(agent)).toBe(1);
    for (const identifier of [held.identifier, general.identifier, session.identifier]) {
      const row = await leaseRowOf(org.orgId, identifier);
      expect(row, identifier).toEqual({ check: first.check + 500 + TTL_MS, expires: first.check + 500 + TTL_MS });
    }

    // PostgreSQL locks the row for any BEFORE UPDATE row trigger, whatever its columns: ending a
    // lease (every finish) would write a lock record before its update (decision 109).
    const triggers = await query<{ name: string }>(
      env.services.db,
      sql`select tgname as name from pg_trigger where tgrelid = 'leases'::regclass and not tgisinternal and (tgtype & 16) <> 0`,
    );
    expect(triggers).toEqual([]);
  });

  it("follows an expiry moved earlier and clears with the lease", async () => {
    const org = await seedOrg(env.services);
    const { alice } = org.agents;
    const issue = await saveIssue(alice.ctx, { title: "Ended", work: true, changeType: "feat", noDependency: "none" });
    const claim = await nextIssue(alice.ctx, {});
    if (!("claimToken" in claim)) throw new Error("nothing claimed");
    await env.services.db.execute(
      sql`update issues set lease_expires_at = lease_expires_at - interval '30 seconds' where org_id = ${org.orgId} and identifier = ${issue.identifier}`,
    );
    const earlier = await leaseOf(org.orgId, issue.identifier);
    expect(earlier.check).toBe(earlier.expires);
    await saveIssue(alice.ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    expect(await leaseOf(org.orgId, issue.identifier)).toEqual({ check: null, expires: null });
  });
});
