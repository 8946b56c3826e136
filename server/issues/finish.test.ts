import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { activityDetail } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import { EVENTS_CHANNEL } from "../events/index.ts";
import { claimIssue, nextIssue } from "../queue/index.ts";
import { useTestServices } from "../testing/database.ts";
import { bindChannel, seedOrg } from "../testing/fixtures.ts";
import { addRelation, getIssue, saveIssue } from "./index.ts";

/**
 * Finishing held work as done has a one-statement path (retasc_finish) beside the general
 * one; they must leave the same rows behind. The general path is taken here by adding a
 * field that changes nothing (the same title).
 */
const env = useTestServices();

interface Trace {
  issue: Record<string, unknown>;
  lease: Record<string, unknown>;
  finished: { facts: unknown; detail: Record<string, unknown>; actor: string | null; key: string | null; runtime: string | null }[];
  outbox: { job: string; payload: Record<string, unknown> }[];
}

async function traceOf(ctx: Ctx, identifier: string): Promise<Trace> {
  const db = ctx.db;
  const [issue] = await query<Record<string, unknown>>(
    db,
    sql`select id, status, own_level, effective_level, effective_due_at, sla_state, sla_next_at, lease_id, lease_token_hash,
          lease_expires_at, open_blocker_count, fence, submitter_id
        from issues where org_id = ${ctx.principal.orgId} and identifier = ${identifier}`,
  );
  const issueId = issue!.id as string;
  const [lease] = await query<Record<string, unknown>>(
    db,
    sql`select fence, end_reason, ended_at is not null as ended from leases where issue_id = ${issueId} order by fence desc limit 1`,
  );
  const cipher = await ctx.keyring.forOrg(db, ctx.principal.orgId);
  const finished = await query<{ facts: unknown; detail_enc: string | null; actor_id: string | null; key_id: string | null; runtime: string | null }>(
    db,
    sql`select facts, detail_enc, actor_id, key_id, runtime from activity where issue_id = ${issueId} and kind = 'finished'`,
  );
  const outbox = await query<{ job: string; payload: Record<string, unknown> }>(
    db,
    sql`select job, payload from outbox where payload->>'issueId' = ${issueId} order by id`,
  );
  const { id: _id, ...rest } = issue!;
  return {
    issue: rest,
    lease: lease!,
    finished: finished.map((f) => ({
      facts: f.facts,
      detail: activityDetail(cipher, { detailEnc: f.detail_enc, facts: null }),
      actor: f.actor_id,
      key: f.key_id,
      runtime: f.runtime,
    })),
    outbox: outbox.map((o) => ({ job: o.job, payload: { ...o.payload, issueId: "(issue)" } })),
  };
}

const updatedEntries = (ctx: Ctx, identifier: string) =>
  query<{ n: number }>(
    ctx.db,
    sql`select count(*)::int as n from activity a join issues i on i.id = a.issue_id
        where i.org_id = ${ctx.principal.orgId} and i.identifier = ${identifier} and a.kind = 'updated'`,
  ).then((rows) => Number(rows[0]!.n));

describe("finishing held work", () => {
  it("the one-statement finish writes what the general path writes", async () => {
    const org = await seedOrg(env.services);
    const { alice } = org.agents;
    const due = new Date(env.services.clock.now().getTime() + 3_600_000).toISOString();
    const fast = await saveIssue(alice.ctx, { title: "Fast", work: true, changeType: "feat", noDependency: "none", priority: 3, dueAt: due });
    const general = await saveIssue(alice.ctx, { title: "General", work: true, changeType: "feat", noDependency: "none", priority: 3, dueAt: due });

    const fastClaim = await claimIssue(alice.ctx, { identifier: fast.identifier });
    const fastDone = await saveIssue(alice.ctx, { identifier: fast.identifier, status: "done", claimToken: fastClaim.claimToken });
    const generalClaim = await claimIssue(alice.ctx, { identifier: general.identifier });
    const generalDone = await saveIssue(alice.ctx, {
      identifier: general.identifier,
      status: "done",
      claimToken: generalClaim.claimToken,
      title: "General",
    });

    // Only the general path records the (unchanged) title as an update: the fast one really ran.
    expect(await updatedEntries(alice.ctx, fast.identifier)).toBe(0);
    expect(await updatedEntries(alice.ctx, general.identifier)).toBe(1);

    const [fastTrace, generalTrace] = [await traceOf(alice.ctx, fast.identifier), await traceOf(alice.ctx, general.identifier)];
    expect(fastTrace).toEqual(generalTrace);
    expect(fastTrace.issue).toMatchObject({ status: "done", own_level: 2, effective_level: 2, sla_state: "none", lease_id: null });
    expect(fastTrace.lease).toMatchObject({ end_reason: "finished", ended: true });
    expect(fastTrace.finished).toEqual([
      { facts: { from: "doing", to: "done", fence: 1 }, detail: {}, actor: alice.userId, key: alice.principal.keyId, runtime: "claude-code" },
    ]);
    // Alice wrote the issue and her agent finished it: nobody would hear the event, so neither path writes it (decision 104).
    expect(fastTrace.outbox).toEqual([]);

    const { identifier: _a, title: _t, branch: _b, createdAt: _c, updatedAt: _u, ...fastView } = fastDone;
    const { identifier: _a2, title: _t2, branch: _b2, createdAt: _c2, updatedAt: _u2, ...generalView } = generalDone;
    expect(fastView).toEqual(generalView);
    expect(fastDone).toEqual(await getIssue(alice.ctx, { identifier: fast.identifier }));
  });

  it("the one-statement finish writes the done event only when the author can hear it", async () => {
    const org = await seedOrg(env.services);
    const { alice, bob, carol } = org.agents;
    await bindChannel(env.services, org.orgId, bob.userId);
    const outboxOf = async (identifier: string) => (await traceOf(alice.ctx, identifier)).outbox;
    const finish = async (author: Ctx) => {
      const issue = await saveIssue(author, { title: "Task", work: true, changeType: "feat", noDependency: "none" });
      const claim = await claimIssue(alice.ctx, { identifier: issue.identifier });
      await saveIssue(alice.ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
      expect(await updatedEntries(alice.ctx, issue.identifier)).toBe(0);
      return outboxOf(issue.identifier);
    };
    // Bob has a channel: his issue's finish by Alice's agent is his to hear.
    expect(await finish(bob.ctx)).toEqual([
      { job: "notify.issue_event", payload: { orgId: org.orgId, issueId: "(issue)", kind: "done", actorId: alice.userId } },
    ]);
    // Carol has none, and Alice is the actor: nothing to send, nothing written.
    expect(await finish(carol.ctx)).toEqual([]);
    expect(await finish(alice.ctx)).toEqual([]);
  });

  it("a finished blocker releases what it gated, and the release is announced after commit", async () => {
    const org = await seedOrg(env.services);
    const { alice } = org.agents;
    const blocker = await saveIssue(alice.ctx, { title: "Schema", work: true, changeType: "feat", noDependency: "first", priority: 4 });
    const gated = await saveIssue(alice.ctx, { title: "Feature", work: true, changeType: "feat", blockedBy: [blocker.identifier], priority: 1 });
    const events: { orgId: string; kind: string; identifier?: string; status?: string }[] = [];
    await new Promise((resolve) => setTimeout(resolve, 100)); // the creates' own notices, sent after their commits
    // Only this org's: the test before may still be announcing its own.
    const unlisten = await env.tdb.database.listen(EVENTS_CHANNEL, (payload) => {
      const event = JSON.parse(payload) as (typeof events)[number];
      if (event.orgId === org.orgId) events.push(event);
    });
    try {
      const claim = await nextIssue(alice.ctx, {});
      expect(claim).toMatchObject({ identifier: blocker.identifier, issue: { effectiveLevel: 4 } });
      if (!("claimToken" in claim)) throw new Error("expected a claim");
      const done = await saveIssue(alice.ctx, { identifier: blocker.identifier, status: "done", claimToken: claim.claimToken });
      expect(done).toMatchObject({ status: "done", effectiveLevel: 1, blocks: [{ identifier: gated.identifier, status: "todo" }] });
      expect((await getIssue(alice.ctx, { identifier: gated.identifier })).openBlockers).toEqual([]);
      expect(await nextIssue(alice.ctx, {})).toMatchObject({ identifier: gated.identifier });
      // Each is sent in its own statement after its commit, so their order is not promised.
      await expect.poll(() => events.map((e) => `${e.kind} ${e.identifier} ${e.status ?? ""}`.trim()).sort()).toEqual(
        [`claim.taken ${blocker.identifier}`, `claim.taken ${gated.identifier}`, `issue.updated ${blocker.identifier} done`].sort(),
      );
    } finally {
      await unlisten();
    }
  });

  it("a stale token, a missing one and another org's issue get the general path's answers", async () => {
    const org = await seedOrg(env.services);
    const other = await seedOrg(env.services);
    const { alice, bob } = org.agents;
    const issue = await saveIssue(alice.ctx, { title: "Held", work: true, changeType: "feat", noDependency: "none" });
    const first = await claimIssue(alice.ctx, { identifier: issue.identifier });
    await saveIssue(alice.ctx, { identifier: issue.identifier, status: "todo" });
    await expect(
      saveIssue(bob.ctx, { identifier: issue.identifier, status: "done", claimToken: "rtclm_" + "x".repeat(32) }),
    ).rejects.toMatchObject({ code: "STALE_CLAIM" });
    await expect(
      saveIssue(other.agents.alice.ctx, { identifier: issue.identifier, status: "done", claimToken: first.claimToken }),
    ).rejects.toMatchObject({ code: "NOT_FOUND" });
    const blocker = await saveIssue(alice.ctx, { title: "Later blocker", work: true, changeType: "feat", noDependency: "none" });
    await addRelation(alice.ctx, { sourceId: blocker.identifier, targetId: issue.identifier, type: "blocks" });
    // Held, but a blocker was added meanwhile: not the fast path's case; the general path finishes it.
    const done = await saveIssue(alice.ctx, { identifier: issue.identifier, status: "done", claimToken: first.claimToken });
    expect(done).toMatchObject({ status: "done", openBlockers: [blocker.identifier] });
  });
});
