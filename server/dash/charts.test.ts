import { describe, expect, it } from "vitest";
import { TestClock, testConfig } from "../testing/db.ts";
import type { Ctx } from "../context.ts";
import { saveIssue } from "../issues/index.ts";
import { humanCtx } from "../orgs/access.ts";
import { claimIssue, reclaimSweep } from "../queue/index.ts";
import { inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { createProject } from "../orgs/index.ts";
import { members } from "../../db/schema/index.ts";
import { and, eq } from "drizzle-orm";
import { sampleQueueDepth } from "./charts-record.ts";
import { fleetCharts } from "./charts.ts";

const clock = new TestClock();
const MINUTE = 60_000;
const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: "600" }) });
const at = (iso: string) => clock.set(new Date(iso));

const create = (ctx: Ctx, title: string) => saveIssue(ctx, { title, work: true, changeType: "feat", noDependency: "standalone" });

/** A save_issue over the whole /mcp path, so the door's counting of a stale refusal is what is tested. */
async function mcpSave(key: string, args: Record<string, unknown>) {
  const response = await inProcessFetch(env.services)(`${inProcessOrigin}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "save_issue", arguments: args } }),
  });
  return (await response.json()).result as { isError?: boolean; structuredContent: { error?: { code: string } } };
}

describe("fleet charts", () => {
  it("buckets finishes, claim-to-done, reclaims, stale writes refused and sampled queue depth by clock hour, over the day and the week", async () => {
    const org = await seedOrg(env.services, { prefix: "CHT" });
    const alice = org.agents.alice.ctx;
    const bob = org.agents.bob.ctx;
    at("2026-07-01T08:10:00Z");
    for (const title of ["a", "b", "c", "d"]) await create(alice, title);
    const finish = async (identifier: string, minutes: number) => {
      const claim = await claimIssue(bob, { identifier });
      clock.advance(minutes * MINUTE);
      await saveIssue(bob, { identifier, claimToken: claim.claimToken, status: "done" });
    };
    await finish("CHT-1", 6); // 08:10 to 08:16
    await finish("CHT-2", 8); // 08:16 to 08:24
    const lapsed = await claimIssue(bob, { identifier: "CHT-3" }); // lease to 08:34
    at("2026-07-01T09:05:00Z");
    expect((await reclaimSweep(env.services)).reclaimed).toBeGreaterThanOrEqual(1);
    const refused = await mcpSave(org.agents.bob.key, { identifier: "CHT-3", claimToken: lapsed.claimToken, status: "done" });
    expect(refused.structuredContent.error?.code).toBe("STALE_CLAIM");
    await sampleQueueDepth(env.services);
    await claimIssue(bob, { identifier: "CHT-4" });
    at("2026-07-01T09:06:00Z");
    await sampleQueueDepth(env.services); // the hour's last sample wins

    const dash = (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;
    const day = await fleetCharts(dash, clock.now(), "day");
    expect(day.buckets).toHaveLength(24);
    expect(day.buckets[0]!.start).toBe("2026-06-30T10:00:00.000Z");
    expect(day.buckets[22]).toEqual({ start: "2026-07-01T08:00:00.000Z", finished: 2, medianMs: 7 * MINUTE, reclaimed: 0, staleRefused: 0, depth: null });
    expect(day.buckets[23]).toEqual({
      start: "2026-07-01T09:00:00.000Z",
      finished: 0,
      medianMs: null,
      reclaimed: 1,
      staleRefused: 1,
      depth: { ready: 0, blocked: 0, doing: 2, review: 0 }, // CHT-3 keeps its status when its lease lapses
    });
    expect(day.buckets.slice(0, 22).every((b) => b.finished === 0 && b.reclaimed === 0 && b.staleRefused === 0 && b.depth === null)).toBe(true);
    expect(day.totals).toEqual({ finished: 2, medianClaimToDoneMs: 7 * MINUTE, reclaimed: 1, staleRefused: 1 });

    const week = await fleetCharts(dash, clock.now(), "week");
    expect(week.buckets).toHaveLength(28);
    expect(week.bucketHours).toBe(6);
    expect(week.buckets[27]).toMatchObject({ start: "2026-07-01T04:00:00.000Z", finished: 2, reclaimed: 1, staleRefused: 1, depth: { ready: 0, doing: 2 } });

    // Two days on, the day is empty and the week still holds it, two days back.
    at("2026-07-03T09:30:00Z");
    expect((await fleetCharts(dash, clock.now(), "day")).totals).toEqual({ finished: 0, medianClaimToDoneMs: null, reclaimed: 0, staleRefused: 0 });
    const later = await fleetCharts(dash, clock.now(), "week");
    expect(later.buckets[19]).toMatchObject({ start: "2026-07-01T04:00:00.000Z", finished: 2, reclaimed: 1, staleRefused: 1 });
    expect(later.totals.finished).toBe(2);

    // Another org sees none of it.
    const other = await seedOrg(env.services, { prefix: "OTH" });
    const otherDash = (await humanCtx(env.services, { orgId: other.orgId, userId: other.agents.alice.userId, runtime: "dash" })).ctx;
    expect((await fleetCharts(otherDash, clock.now(), "week")).totals).toEqual({ finished: 0, medianClaimToDoneMs: null, reclaimed: 0, staleRefused: 0 });
  });

  it("counts a scoped member's projects only, in the hourly samples as in the rest (decision 042)", async () => {
    const org = await seedOrg(env.services, { prefix: "SCP" });
    const ops = await createProject(env.services.db, { orgId: org.orgId, name: "Ops", prefix: "OPX" });
    await env.services.db
      .update(members)
      .set({ projectIds: [org.projectId] })
      .where(and(eq(members.orgId, org.orgId), eq(members.userId, org.agents.carol.userId)));
    const alice = org.agents.alice.ctx;
    const bob = org.agents.bob.ctx;
    at("2026-08-01T08:10:00Z");
    await create(alice, "seen");
    for (const title of ["ops a", "ops b", "ops c"]) await saveIssue(alice, { title, work: true, changeType: "feat", noDependency: "standalone", project: ops.prefix });
    // A stale write in each project: a lapsed claim, reclaimed, then a finish under its old token.
    const lapsed = [await claimIssue(bob, { identifier: "SCP-1" }), await claimIssue(bob, { identifier: "OPX-1" })];
    at("2026-08-01T09:05:00Z");
    await reclaimSweep(env.services);
    for (const claim of lapsed) {
      const refused = await mcpSave(org.agents.bob.key, { identifier: claim.identifier, claimToken: claim.claimToken, status: "done" });
      expect(refused.structuredContent.error?.code).toBe("STALE_CLAIM");
    }
    await sampleQueueDepth(env.services);

    const dashOf = async (who: "alice" | "carol") =>
      (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents[who].userId, runtime: "dash" })).ctx;
    const all = (await fleetCharts(await dashOf("alice"), clock.now(), "day")).buckets[23];
    expect(all).toMatchObject({ reclaimed: 2, staleRefused: 2, depth: { ready: 2, blocked: 0, doing: 2, review: 0 } });
    const scoped = (await fleetCharts(await dashOf("carol"), clock.now(), "day")).buckets[23];
    expect(scoped).toMatchObject({ reclaimed: 1, staleRefused: 1, depth: { ready: 0, blocked: 0, doing: 1, review: 0 } });
  });
});
