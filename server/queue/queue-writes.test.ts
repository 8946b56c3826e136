import { describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { issues, outbox } from "../../db/schema/index.ts";
import { addRelation, saveIssue } from "../issues/index.ts";
import { bindChannel } from "../testing/fixtures.ts";
import { claimIssue, reclaimSweep } from "./index.ts";
import { create, queueWorld } from "./testing/queue-world.ts";

// Issue writes as the queue relies on them (numbers, dependencies and cycles, cancels, due dates),
// and the notices the queue's writes leave in the outbox.
const { clock, env, fresh } = queueWorld();

describe("issue writes", () => {
  it("numbers issues per project and requires work and a dependency declaration", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const first = await create(a, "First");
    const second = await create(a, "Second", { blockedBy: [first.identifier], noDependency: undefined });
    expect([first.identifier, second.identifier]).toEqual(["RTSC-1", "RTSC-2"]);
    expect(second.openBlockers).toEqual(["RTSC-1"]);
    await expect(saveIssue(a, { title: "x", noDependency: "n" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(saveIssue(a, { title: "x", work: true })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(saveIssue(a, { title: "x", work: true, blockedBy: ["RTSC-1"], noDependency: "n" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
  });

  it("numbers concurrent creates without gaps or collisions", async () => {
    const org = await fresh("CONC");
    const a = org.agents.alice.ctx;
    const made = await Promise.all(Array.from({ length: 40 }, (_, i) => create(a, `issue ${i}`)));
    const numbers = made.map((m) => Number(m.identifier.split("-")[1])).sort((x, y) => x - y);
    expect(numbers).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it("rejects dependency cycles and self relations", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const x = await create(a, "x");
    const y = await create(a, "y", { blockedBy: [x.identifier], noDependency: undefined });
    const z = await create(a, "z", { blockedBy: [y.identifier], noDependency: undefined });
    await expect(addRelation(a, { sourceId: z.identifier, targetId: x.identifier, type: "blocks" })).rejects.toMatchObject({
      code: "CYCLE",
    });
    await expect(addRelation(a, { sourceId: x.identifier, targetId: z.identifier, type: "blocked_by" })).rejects.toMatchObject({
      code: "CYCLE",
    });
    await expect(addRelation(a, { sourceId: x.identifier, targetId: x.identifier, type: "related" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
  });

  it("cancels only with a reason and keeps terminal issues closed", async () => {
    const org = await fresh();
    const a = org.agents.alice.ctx;
    const x = await create(a, "x");
    await expect(saveIssue(a, { identifier: x.identifier, status: "canceled" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    const canceled = await saveIssue(a, { identifier: x.identifier, status: "canceled", cancelReason: "duplicate of RTSC-9" });
    expect(canceled.cancelReason).toBe("duplicate of RTSC-9");
    await expect(saveIssue(a, { identifier: x.identifier, status: "todo" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("reads a calendar dueAt as the end of that day in the org's time zone", async () => {
    const org = await fresh();
    const issue = await create(org.agents.alice.ctx, "dated", { dueAt: "2026-12-24" });
    expect(issue.dueAt).toBe("2026-12-24T23:59:59.999Z");
    await expect(create(org.agents.alice.ctx, "bad", { dueAt: "2026-13-40" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });
});
describe("notices", () => {
  it("queues a notice in the outbox with each finish, review, cancel, assignment and reclaim", async () => {
    const org = await fresh("NOTE");
    const { alice, bob } = org.agents;
    // done and canceled reach the author, never the actor: Bob's issues, closed by Alice, with a channel
    // of Bob's (an event nobody would hear is not written, decision 104; server/issues/finish.test.ts).
    await bindChannel(env.services, org.orgId, bob.userId);
    const done = await create(bob.ctx, "done one");
    const reviewed = await create(alice.ctx, "reviewed one");
    const canceled = await create(bob.ctx, "canceled one");
    const lapsed = await create(alice.ctx, "lapsed one");
    const c1 = await claimIssue(alice.ctx, { identifier: done.identifier });
    await saveIssue(alice.ctx, { identifier: done.identifier, claimToken: c1.claimToken, status: "done" });
    const c2 = await claimIssue(alice.ctx, { identifier: reviewed.identifier });
    await saveIssue(alice.ctx, { identifier: reviewed.identifier, claimToken: c2.claimToken, status: "review", assignee: bob.userId, handoff: "built on its branch" });
    await saveIssue(alice.ctx, { identifier: canceled.identifier, status: "canceled", cancelReason: "not needed" });
    await saveIssue(alice.ctx, { identifier: lapsed.identifier, assignee: bob.userId });
    await saveIssue(alice.ctx, { identifier: lapsed.identifier, title: "renamed" }); // no notice
    await claimIssue(bob.ctx, { identifier: lapsed.identifier });
    clock.advance(601_000);
    await reclaimSweep(env.services);
    const rows = await env.tdb.database.db.select({ payload: outbox.payload }).from(outbox).where(eq(outbox.orgId, org.orgId));
    const all = await env.tdb.database.db.select({ id: issues.id, identifier: issues.identifier }).from(issues).where(eq(issues.orgId, org.orgId));
    const idOf = new Map(all.map((r) => [r.identifier, r.id]));
    const byIssue = (identifier: string) => idOf.get(identifier);
    const seen = rows.map((r) => r.payload as { issueId: string; kind: string; actorId: string | null });
    expect(seen.map((p) => [p.issueId, p.kind]).sort()).toEqual(
      [
        [byIssue(done.identifier), "done"],
        [byIssue(reviewed.identifier), "review"],
        [byIssue(canceled.identifier), "canceled"],
        [byIssue(lapsed.identifier), "assigned"],
        [byIssue(lapsed.identifier), "reclaimed"],
      ].sort(),
    );
    expect(seen.find((p) => p.kind === "done")!.actorId).toBe(alice.userId);
    expect(seen.find((p) => p.kind === "reclaimed")!.actorId).toBeNull();
  });
});
