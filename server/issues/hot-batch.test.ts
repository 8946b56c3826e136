import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { nextIssue } from "../queue/index.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { saveIssue } from "./index.ts";
import { addRelation } from "./relations.ts";

/**
 * Claims and finishes share one lane per pool (server/issues/hot-batch.ts, decision 124): a
 * finish and a claim that wait together leave as one statement, so they commit in one
 * transaction. The rows a transaction writes carry its id (`xmin`), which is how this test sees
 * it on either driver.
 */

const env = useTestServices();

const task = (title: string, priority: number) => ({ title, work: true, changeType: "feat" as const, priority, noDependency: "independent" });

async function claim(ctx: Parameters<typeof nextIssue>[0]) {
  const reply = await nextIssue(ctx, {});
  if (!("claimToken" in reply)) throw new Error(`expected a claim, got ${JSON.stringify(reply)}`);
  return reply;
}

/** The transaction that wrote each issue's `kind` activity row (one each here). */
async function writers(orgId: string, kind: string, identifiers: string[]) {
  const rows = await query<{ identifier: string; xid: string }>(
    env.services.db,
    sql`select i.identifier, a.xmin::text as xid from activity a join issues i on i.org_id = a.org_id and i.id = a.issue_id
         where a.org_id = ${orgId} and a.kind = ${kind} and i.identifier in ${identifiers}`,
  );
  return Object.fromEntries(rows.map((r) => [r.identifier, r.xid]));
}

/** An org with two issues queued, Alice holding the first. */
async function firstHeld(prefix: string) {
  const org = await seedOrg(env.services, { prefix });
  const { alice, bob } = org.agents;
  const first = await saveIssue(alice.ctx, task("First", 1));
  const second = await saveIssue(alice.ctx, task("Second", 2));
  const held = await claim(alice.ctx);
  expect(held.identifier).toBe(first.identifier);
  return { org, alice, bob, first, second, held };
}

describe("claims and finishes that wait together (decision 124)", () => {
  it("leave as one statement: one transaction takes the claim and ends the other lease, and each call gets its own answer", async () => {
    const { org, alice, bob, first, second, held } = await firstHeld("HB");

    // Called in one turn, as two requests arriving together on one instance.
    const [finished, taken] = await Promise.all([
      saveIssue(alice.ctx, { identifier: first.identifier, status: "done", claimToken: held.claimToken }),
      claim(bob.ctx),
    ]);

    expect(finished.status).toBe("done");
    expect(taken.identifier).toBe(second.identifier);
    const finishedBy = await writers(org.orgId, "finished", [first.identifier]);
    const claimedBy = await writers(org.orgId, "claimed", [second.identifier]);
    expect(finishedBy[first.identifier]).toBeDefined();
    expect(claimedBy[second.identifier]).toBe(finishedBy[first.identifier]);
  });

  it("records no claim before a finish of its statement, whatever the callers' clocks: its claims take the statement's latest", async () => {
    const { org, alice, bob, first, second, held } = await firstHeld("HT");
    // Bob's instance runs five seconds behind Alice's.
    const behind = { ...bob.ctx, clock: { now: () => new Date(Date.now() - 5_000) } };
    await Promise.all([saveIssue(alice.ctx, { identifier: first.identifier, status: "done", claimToken: held.claimToken }), claim(behind)]);

    const [times] = await query<{ finished: string; claimed: string; same: boolean }>(
      env.services.db,
      sql`select f.created_at::text as finished, c.created_at::text as claimed, f.xmin = c.xmin as same
            from activity f, activity c join issues i on i.org_id = c.org_id and i.id = c.issue_id
           where f.org_id = ${org.orgId} and f.kind = 'finished' and c.kind = 'claimed' and i.identifier = ${second.identifier}`,
    );
    expect(times!.same).toBe(true);
    expect(Date.parse(times!.claimed)).toBeGreaterThanOrEqual(Date.parse(times!.finished));
  });

  it("runs the finishes first, so a claim of the same statement can take the work a finish unblocked", async () => {
    const org = await seedOrg(env.services, { prefix: "HU" });
    const { alice, bob } = org.agents;
    const blocker = await saveIssue(alice.ctx, task("Blocker", 2));
    const other = await saveIssue(alice.ctx, task("Other", 3));
    // The most urgent work, blocked until the blocker is done.
    const urgent = await saveIssue(alice.ctx, task("Urgent", 1));
    await addRelation(alice.ctx, { sourceId: blocker.identifier, targetId: urgent.identifier, type: "blocks" });
    const held = await claim(alice.ctx);
    expect(held.identifier).toBe(blocker.identifier);

    const [, taken] = await Promise.all([
      saveIssue(alice.ctx, { identifier: blocker.identifier, status: "done", claimToken: held.claimToken }),
      claim(bob.ctx),
    ]);

    expect(taken.identifier).toBe(urgent.identifier);
    const claimedBy = await writers(org.orgId, "claimed", [urgent.identifier]);
    const finishedBy = await writers(org.orgId, "finished", [blocker.identifier]);
    expect(claimedBy[urgent.identifier]).toBe(finishedBy[blocker.identifier]);
    // The issue it passed over is still there for the next claim.
    expect((await claim(bob.ctx)).identifier).toBe(other.identifier);
  });
});
