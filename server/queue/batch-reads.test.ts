import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query, type Db } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { randomToken } from "../crypto/index.ts";
import { finishCall } from "../issues/finish.ts";
import { saveIssue } from "../issues/index.ts";
import { addRelation } from "../issues/relations.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { nextIssue } from "./index.ts";
import { nextIssueCall, type NextIssueCall } from "./next.ts";

/**
 * What a batch of claims and a finish read (migration 0087, decision 120): the wave once per
 * batch and set of lanes, after every claim of the batch; a finish's relations only when its
 * issue's relations bit says it may have some. Both are called here as the doors call them, one
 * statement for the batch (server/queue/next.ts claimNext, server/issues/finish.ts).
 */

const env = useTestServices();

/** A next_issue call as nextIssue sends it for `ctx`. */
const claimCall = (ctx: Ctx, now: Date) => nextIssueCall(ctx, now, randomToken("rtclm_", 24), { allLanes: false, checkSla: true });

type Claimed = { index: number; outcome: string; issue: { identifier: string }; wave: { identifier: string }[] };

async function claimBatch(db: Db, calls: NextIssueCall[]) {
  const [row] = await query<{ results: Claimed[] }>(db, sql`select retasc_next_issues(${JSON.stringify(calls)}::jsonb) as results`);
  return row!.results.sort((a, b) => a.index - b.index);
}

describe("a batch of claims and a finish read less (decision 120)", () => {
  it("the claims of one batch in the same lanes share one wave, read after all of them: it names none of the issues they took", async () => {
    const org = await seedOrg(env.services, { prefix: "BW" });
    const { alice, bob } = org.agents;
    const filed: string[] = [];
    // One after another at one priority: the dispatch order is the filing order.
    for (let i = 0; i < 12; i++) filed.push((await saveIssue(alice.ctx, { title: `Queued ${i}`, work: true, changeType: "feat", priority: 2, noDependency: "independent" })).identifier);
    const second = await org.agentFor("alice", "second-runtime");
    const now = new Date();
    const results = await claimBatch(env.services.db, [
      claimCall(alice.ctx, now),
      claimCall(second.ctx, now),
      claimCall(alice.ctx, now),
      claimCall(bob.ctx, now),
    ]);

    expect(results.map((r) => r.outcome)).toEqual(["claimed", "claimed", "claimed", "claimed"]);
    const taken = results.map((r) => r.issue.identifier);
    expect(new Set(taken)).toEqual(new Set(filed.slice(0, 4)));
    // Alice's three claims (two keys) share their lanes, and so their wave; Bob's lanes are his own.
    const aliceWave = results[0]!.wave.map((w) => w.identifier);
    expect(results[1]!.wave.map((w) => w.identifier)).toEqual(aliceWave);
    expect(results[2]!.wave.map((w) => w.identifier)).toEqual(aliceWave);
    // Read once every claim was taken: the next five, none of them taken by the batch.
    expect(aliceWave).toEqual(filed.slice(4, 9));
    expect(results[3]!.wave.map((w) => w.identifier)).toEqual(filed.slice(4, 9));
  });

  it("a finish reads an issue's relations only when its relations bit is set, and one with an edge still unblocks what it blocked", async () => {
    const org = await seedOrg(env.services, { prefix: "BF" });
    const { alice, bob } = org.agents;
    const db = env.services.db;
    const file = (title: string, priority: number) => saveIssue(alice.ctx, { title, work: true, changeType: "feat", priority, noDependency: "independent" });
    const finish = async (identifier: string, claimToken: string) => {
      const call = finishCall(bob.ctx, identifier, claimToken, new Date());
      const [row] = await query<{ results: { outcome: string }[] }>(db, sql`select retasc_finishes(${JSON.stringify([call])}::jsonb) as results`);
      return row!.results[0]!.outcome;
    };
    const claim = async () => {
      const reply = await nextIssue(bob.ctx, {});
      if (!("claimToken" in reply)) throw new Error("expected a claim");
      return reply;
    };
    const blockersOf = async (identifier: string) =>
      (await query<{ n: number }>(db, sql`select open_blocker_count as n from issues where org_id = ${org.orgId} and identifier = ${identifier}`))[0]!.n;

    // The real path: the edge set the bit, the finish finds the edge and frees what it blocked.
    const blocker = await file("Blocker", 1);
    const blocked = await file("Blocked", 3);
    await addRelation(alice.ctx, { sourceId: blocker.identifier, targetId: blocked.identifier, type: "blocks" });
    const held = await claim();
    expect(held.identifier).toBe(blocker.identifier);
    expect(await finish(blocker.identifier, held.claimToken)).toBe("finished");
    expect(await blockersOf(blocked.identifier)).toBe(0);

    // The bit is read first: cleared by hand on an issue that has an edge, the finish takes its
    // word and never reads the relations, so what the issue blocked stays blocked. (Nothing but
    // this test clears a bit: the triggers set it with the first relation, decision 119.)
    const second = await file("Second blocker", 1);
    const waiting = await file("Waiting", 3);
    await addRelation(alice.ctx, { sourceId: second.identifier, targetId: waiting.identifier, type: "blocks" });
    const again = await claim();
    expect(again.identifier).toBe(second.identifier);
    await db.execute(sql`update issues set view_extras = 0 where org_id = ${org.orgId} and identifier = ${second.identifier}`);
    expect(await finish(second.identifier, again.claimToken)).toBe("finished");
    expect(await blockersOf(waiting.identifier)).toBe(1);
  });

  it("a batch of finishes finds each issue by its key: it reads one issue a call, however many issues the table holds", async () => {
    const org = await seedOrg(env.services, { prefix: "BK" });
    const { alice, bob } = org.agents;
    const db = env.services.db;
    const filed = await saveIssue(alice.ctx, { title: "To finish", work: true, changeType: "feat", priority: 1, noDependency: "independent" });
    // 400 more issues, done, beside it: copies of its row under new keys.
    await db.execute(sql`insert into issues
      select (jsonb_populate_record(null::issues, to_jsonb(i) || jsonb_build_object(
        'id', i.id || '-' || g, 'identifier', i.identifier || '-' || g, 'number', i.number + g, 'status', 'done'))).*
        from issues i, generate_series(1, 400) g where i.org_id = ${org.orgId} and i.identifier = ${filed.identifier}`);
    await db.execute(sql`analyze issues`);
    const held = await nextIssue(bob.ctx, {});
    if (!("claimToken" in held)) throw new Error("expected a claim");
    expect(held.identifier).toBe(filed.identifier);
    const call = finishCall(bob.ctx, held.identifier, held.claimToken, new Date());
    // Issue rows fetched through an index by this transaction (PostgreSQL's own count).
    const { outcome, fetched } = await db.transaction(async (tx) => {
      const [row] = await query<{ results: { outcome: string }[] }>(tx, sql`select retasc_finishes(${JSON.stringify([call])}::jsonb) as results`);
      const [stats] = await query<{ fetched: number }>(tx, sql`select idx_tup_fetch::int as fetched from pg_stat_xact_user_tables where relname = 'issues'`);
      return { outcome: row!.results[0]!.outcome, fetched: stats!.fetched };
    });
    expect(outcome).toBe("finished");
    // The finish's own reads of its issue, a few; a join that read the whole table would fetch 401.
    expect(fetched).toBeLessThan(20);
  });
});
