import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { issueDetail } from "../dash/issue.ts";
import { saveIssue } from "../issues/index.ts";
import { humanCtx } from "../orgs/access.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { activityPages } from "../transfer/read-org.ts";
import { usageSummary } from "../usage/index.ts";
import { checkpoint, claimIssue, heartbeat } from "./index.ts";
import { renewByHeartbeat } from "./lease.ts";

/**
 * A run of heartbeats is one activity row kept in place (decision 105): a beat that goes on a run
 * updates its row (HOT) instead of inserting one with three index entries, which was most of a
 * heartbeat's WAL. The timeline, the export and the meter still read every beat.
 */
const clock = new TestClock();
const env = useTestServices({ clock });
const SECOND = 1000;

const beatRows = (ctx: Ctx, identifier: string) =>
  query<{ facts: Record<string, unknown>; created_at: Date; runtime: string }>(
    ctx.db,
    sql`select a.facts, a.created_at, a.runtime from activity a join issues i on i.id = a.issue_id
        where i.org_id = ${ctx.principal.orgId} and i.identifier = ${identifier} and a.kind = 'heartbeat' order by a.id`,
  );

async function claimed(ctx: Ctx, title: string) {
  const { identifier } = await saveIssue(ctx, { title, work: true, changeType: "feat", noDependency: "beat runs test" });
  const { claimToken } = await claimIssue(ctx, { identifier });
  return { identifier, claimToken };
}

describe("a run of heartbeats", () => {
  it("is one activity row, whichever path renews, that counts its beats and keeps the first and the last", async () => {
    const org = await seedOrg(env.services, { prefix: "RUN" });
    const ctx = org.agents.alice.ctx;
    const held = await claimed(ctx, "held path");
    const general = await claimed(ctx, "general path");
    const first = new Date(clock.now().getTime() + 30 * SECOND);
    for (let beat = 0; beat < 5; beat++) {
      clock.advance(30 * SECOND);
      await heartbeat(ctx, held);
      await renewByHeartbeat(ctx, general);
    }
    const last = clock.now().toISOString();
    for (const identifier of [held.identifier, general.identifier]) {
      const rows = await beatRows(ctx, identifier);
      // One row per beat again (the log before decision 105) fails here with 5.
      expect(rows).toHaveLength(1);
      expect(rows[0]!.facts).toEqual({ fence: 1, beats: 5, lastAt: last });
      expect(new Date(rows[0]!.created_at).toISOString()).toBe(first.toISOString());
    }

    // The timeline says how many and until when; the export carries the run; the meter counts each beat.
    const dash = (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;
    const detail = await issueDetail(dash, { identifier: held.identifier });
    const run = detail.activity.find((e) => e.kind === "heartbeat")!;
    expect(run).toMatchObject({ label: "heartbeats", text: `lease renewed 5 times by claude-code, the last at ${last.slice(11, 16)} UTC, fence 1` });
    const exported = [];
    for await (const page of activityPages(ctx.db, await env.services.keyring.forOrg(ctx.db, org.orgId), org.orgId)) exported.push(...page);
    expect(exported.filter((e) => e.issue === held.identifier && e.kind === "heartbeat")).toMatchObject([{ facts: { fence: 1, beats: 5, lastAt: last } }]);
    const usage = await usageSummary(ctx, {});
    expect(usage.byKind.find((w) => w.kind === "heartbeat")).toEqual({ kind: "heartbeat", count: 10 });
  });

  it("ends at any other activity on the issue, a recovery, or another runtime", async () => {
    const org = await seedOrg(env.services, { prefix: "RNE" });
    const ctx = org.agents.alice.ctx;
    const { identifier, claimToken } = await claimed(ctx, "ended runs");
    await heartbeat(ctx, { identifier, claimToken });
    await heartbeat(ctx, { identifier, claimToken });
    await checkpoint(ctx, { identifier, claimToken, done: "half" });
    await heartbeat(ctx, { identifier, claimToken });
    // A recovery (a new token on the same lease) logs a heartbeat with detail: never a run's row.
    const { claimToken: recovered } = await claimIssue(ctx, { identifier, claimToken });
    await heartbeat(ctx, { identifier, claimToken: recovered });
    await heartbeat({ ...ctx, principal: { ...ctx.principal, runtime: "codex" } }, { identifier, claimToken: recovered });
    const rows = await beatRows(ctx, identifier);
    expect(rows.map((r) => [r.runtime, r.facts.beats ?? 1])).toEqual([
      ["claude-code", 2],
      ["claude-code", 1],
      ["claude-code", 1],
      ["claude-code", 1],
      ["codex", 1],
    ]);
  });
});
