import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { saveIssue } from "../server/issues/index.ts";
import { useTestServices } from "../server/testing/database.ts";
import { seedOrg } from "../server/testing/fixtures.ts";
import { analyzeTables, retascSweeps } from "./sweeps.ts";

/** The embedded mode gathers the planner's statistics itself: PGlite runs no autovacuum (decision 102). */
const env = useTestServices();

describe("sweep.analyze", () => {
  it("runs only in the embedded mode, and leaves the planner what it needs to find a claim's issue by its key", async () => {
    const names = (mode: "embedded" | "server") => retascSweeps({ ...env.services.config, mode }).map((sweep) => sweep.name);
    expect(names("embedded")).toContain("sweep.analyze");
    expect(names("server")).not.toContain("sweep.analyze");

    const org = await seedOrg(env.services, { prefix: "ANZ" });
    for (let n = 0; n < 12; n++) await saveIssue(org.agents.alice.ctx, { title: `t${n}`, work: true, changeType: "feat", noDependency: "independent" });
    const known = async () =>
      (await query<{ n: number }>(env.services.db, sql`select reltuples::int as n from pg_class where relname = 'issues' and relkind = 'r'`))[0]!.n;
    // The generic plan of a claim's lock on its issue (retasc_next_issue, org and id named).
    await env.services.db.execute(sql.raw(`create function pick_lock_plan() returns text language plpgsql as $$
      declare line text; plan text := ''; begin
        set local plan_cache_mode = force_generic_plan;
        set local enable_seqscan = off; -- as the dispatch functions run
        prepare pick_lock(text, text) as select 1 from issues i where i.org_id = $1 and i.id = $2 and i.work
          and i.status in ('todo', 'doing', 'review') and i.open_blocker_count = 0 for no key update skip locked;
        for line in explain execute pick_lock('o', 'i') loop plan := plan || line || chr(10); end loop;
        deallocate pick_lock;
        return plan;
      end $$`));
    const pickLockPlan = async () => (await query<{ plan: string }>(env.services.db, sql`select pick_lock_plan() as plan`))[0]!.plan;
    // The planner finds the row by its key: the primary key, or the (org_id, id) key the foreign
    // keys between org tables reference (decision 112). Since that key, it does so even on a
    // database made from the migrations, whose statistics know nothing of what was written since
    // (before it, the lock read every open issue of the org through an index led by the org);
    // the sweep then gives the planner the rows' count, and the plan stays a key lookup.
    const byKey = /Index Scan using (issues_pkey|issues_org_id_uq) on issues i[^\n]*\n\s*Index Cond: \((\(org_id = \$1\) AND )?\(?id = \$2\)\)?/;
    expect(await known()).toBeLessThan(12);
    expect(await pickLockPlan()).toMatch(byKey);
    expect(await analyzeTables(env.services)).toEqual({ analyzed: 1 });
    expect(await known()).toBe(12);
    expect(await pickLockPlan()).toMatch(byKey);
  });
});
