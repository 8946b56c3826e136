import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { saveIssue } from "../server/issues/index.ts";
import { backfillLabelOrgs } from "../server/issues/label-orgs.ts";
import { createLogger } from "../server/log.ts";
import { useTestServices } from "../server/testing/database.ts";
import { seedOrg } from "../server/testing/fixtures.ts";
import { retascSweeps, runSweepTick } from "./sweeps.ts";

/** issue_labels rows from before migration 0071 get their issue's org from a sweep, in bounded batches (decision 099). */
const env = useTestServices();

describe("sweep.issue-labels-org", () => {
  it("fills the org of rows written before the column, in batches, after which the check validates", async () => {
    const db = env.services.db;
    const one = await seedOrg(env.services, { prefix: "LBA" });
    const two = await seedOrg(env.services, { prefix: "LBB" });
    for (const org of [one, two]) {
      for (let n = 0; n < 3; n++) {
        await saveIssue(org.agents.alice.ctx, { title: `t${n}`, work: true, changeType: "feat", noDependency: "none", labels: ["bug", "ui"] });
      }
    }
    // Rows as a database migrated before 0071 holds them: no org.
    await db.execute(sql`alter table issue_labels drop constraint issue_labels_org_id_present`);
    await db.execute(sql`update issue_labels set org_id = null`);
    const missing = async () => (await query<{ n: number }>(db, sql`select count(*)::int as n from issue_labels where org_id is null`))[0]!.n;
    expect(await missing()).toBe(12);
    expect(await backfillLabelOrgs(env.services, { batch: 5, maxBatches: 2 })).toEqual({ filled: 10, batches: 2 });
    expect(await missing()).toBe(2);
    const sweep = retascSweeps(env.services.config).find((s) => s.name === "sweep.issue-labels-org")!;
    const ran = await runSweepTick(env.services, createLogger("silent"), sweep, Date.now());
    expect(ran).toEqual({ ran: true, result: { filled: 2, batches: 1 } });
    const wrong = await query<{ n: number }>(
      db,
      sql`select count(*)::int as n from issue_labels il join issues i on i.id = il.issue_id where il.org_id is distinct from i.org_id`,
    );
    expect(wrong).toEqual([{ n: 0 }]);
    // What the later migration does once a deployment's rows are filled.
    await db.execute(sql`alter table issue_labels add constraint issue_labels_org_id_present check (org_id is not null) not valid`);
    await db.execute(sql`alter table issue_labels validate constraint issue_labels_org_id_present`);
    expect(await backfillLabelOrgs(env.services)).toEqual({ filled: 0, batches: 1 });
  });
});
