import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { saveIssue } from "../issues/index.ts";
import { deleteOrg } from "../orgs/index.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { claimIssue, heartbeat, nextIssue } from "./index.ts";

/**
 * A claim, a heartbeat and a finish lock nothing of the org's row (decision 109): `leases` and
 * `activity` keep `org_id` with no foreign key to `orgs`, whose check took a key-share lock on that
 * row in each transaction (a WAL record each, a MultiXact once two transactions of one org
 * overlap). The lock leaves the locker's xid in the row's xmax; with the foreign keys of main,
 * the xmax here moves at the first claim.
 */
const clock = new TestClock();
const env = useTestServices({ clock });

const orgXmax = async (orgId: string) =>
  (await query<{ xmax: string }>(env.services.db, sql`select xmax::text as xmax from orgs where id = ${orgId}`))[0]!.xmax;

describe("the org's row", () => {
  it("is not locked by a claim, a heartbeat or a finish", async () => {
    const org = await seedOrg(env.services, { prefix: "ORL" });
    const ctx = org.agents.alice.ctx;
    const first = await saveIssue(ctx, { title: "picked", work: true, changeType: "feat", noDependency: "org row test" });
    const second = await saveIssue(ctx, { title: "named", work: true, changeType: "feat", noDependency: "org row test" });
    const before = await orgXmax(org.orgId);

    // The fast paths: next_issue's claim, a first heartbeat (an activity row), retasc_finish.
    const picked = await nextIssue(ctx, {});
    if (!("claimToken" in picked)) throw new Error("nothing claimed");
    expect(picked.identifier).toBe(first.identifier);
    clock.advance(30_000);
    await heartbeat(ctx, { identifier: picked.identifier, claimToken: picked.claimToken });
    await saveIssue(ctx, { identifier: picked.identifier, status: "done", claimToken: picked.claimToken });
    // A claim by name (retasc_take_lease) and its plain finish.
    const named = await claimIssue(ctx, { identifier: second.identifier });
    await saveIssue(ctx, { identifier: second.identifier, status: "done", claimToken: named.claimToken });
    expect(await orgXmax(org.orgId)).toBe(before);

    const rows = await query<{ leases: number; logged: number }>(
      env.services.db,
      sql`select (select count(*)::int from leases where org_id = ${org.orgId}) as leases,
                 (select count(*)::int from activity where org_id = ${org.orgId} and kind in ('claimed', 'heartbeat', 'finished')) as logged`,
    );
    expect(rows[0]).toEqual({ leases: 2, logged: 5 });
  });

  it("going takes its leases and its activity with it, with no foreign key to cascade them", async () => {
    const org = await seedOrg(env.services, { prefix: "ORG" });
    const ctx = org.agents.alice.ctx;
    await saveIssue(ctx, { title: "held", work: true, changeType: "feat", noDependency: "org row test" });
    const picked = await nextIssue(ctx, {});
    if (!("claimToken" in picked)) throw new Error("nothing claimed");
    await deleteOrg(env.services, env.services.db, org.orgId);
    const left = await query<{ n: number }>(
      env.services.db,
      sql`select (select count(*) from leases where org_id = ${org.orgId}) + (select count(*) from activity where org_id = ${org.orgId}) as n`,
    );
    expect(Number(left[0]!.n)).toBe(0);
  });
});
