import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { systemPrincipal } from "../context.ts";
import { saveIssue } from "../issues/index.ts";
import { deleteOrg } from "../orgs/delete.ts";
import { purgeOrg } from "../orgs/purge.ts";
import { claimIssue, releaseIssue } from "../queue/index.ts";
import { useTestServices } from "../testing/database.ts";
import { testDriver } from "../testing/db.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { removeTemps, tempDir } from "../testing/temp-dirs.ts";
import { importExport } from "../transfer/import.ts";
import { furnishOrg, writeExport } from "../transfer/testing.ts";
import { withPrincipal } from "../with-principal.ts";
import { foldIssueCounts, readIssueCounts } from "./issue-counts.ts";

/**
 * The `retasc_issues` gauge reads counts kept by triggers (decision 077). They must equal a
 * count from scratch after every kind of write: creates, claims, releases, finishes, cancels,
 * an import and an org's deletion, folded or not, and under concurrent claims and folds.
 */
const env = useTestServices();
afterAll(removeTemps);

async function expectExact() {
  const kept = new Map(await readIssueCounts(env.services.db));
  const counted = await query<{ status: string; n: number }>(env.services.db, sql`select status, count(*)::int as n from issues group by status`);
  expect(kept).toEqual(new Map(counted.map((r) => [r.status, Number(r.n)])));
}
const fold = () => foldIssueCounts(env.services);
const task = (title: string) => ({ title, work: true, changeType: "feat" as const, noDependency: "counts" });

describe("issue counts for /metrics", () => {
  it("stay exact through creates, claims, releases, finishes, cancels, an import and a deletion", async () => {
    const org = await seedOrg(env.services, { prefix: "CNT" });
    const ctx = org.agents.alice.ctx;
    const made = [];
    for (let i = 0; i < 6; i++) made.push(await saveIssue(ctx, task(`count ${i}`)));
    await expectExact();
    const claims = [];
    for (const issue of made.slice(0, 4)) claims.push(await claimIssue(ctx, { identifier: issue.identifier }));
    await expectExact();
    expect((await fold()).folded).toBeGreaterThan(0);
    await expectExact();
    await saveIssue(ctx, { identifier: made[0]!.identifier, status: "done", claimToken: claims[0]!.claimToken });
    await releaseIssue(ctx, { identifier: made[1]!.identifier, claimToken: claims[1]!.claimToken });
    await saveIssue(ctx, { identifier: made[5]!.identifier, status: "canceled", cancelReason: "not needed" });
    await expectExact();
    await fold();
    await expectExact();
    expect(await fold()).toEqual({ folded: 0 });

    // An import writes its issues in multi-row statements.
    const source = await seedOrg(env.services, { prefix: "SRC" });
    await furnishOrg(source);
    const file = await writeExport(withPrincipal(env.services, systemPrincipal(source.orgId)), tempDir("retasc-counts-"));
    const imported = await importExport(env.services, { file, "org-name": "Counted" });
    expect(imported.issues).toBeGreaterThan(0);
    await expectExact();

    // A deleted org's rows go in batches.
    await deleteOrg(withPrincipal(env.services, systemPrincipal(org.orgId)), {});
    await purgeOrg(env.services.db, org.orgId, { batch: 4 });
    await expectExact();
    await fold();
    await expectExact();
  });

  it("come from one status-change trigger with no WHEN clause (decision 121)", async () => {
    // PostgreSQL compiles a row trigger's WHEN clause again in every statement that updates its
    // columns; a claim and a finish each update the status, so the rules ask their questions inside.
    const triggers = await query<{ name: string; when: boolean }>(
      env.services.db,
      sql`select tgname as name, tgqual is not null as "when" from pg_trigger
           where tgrelid = 'issues'::regclass and not tgisinternal and (tgtype & 1) = 1 and (tgtype & 16) = 16
           order by tgname`,
    );
    expect(triggers.filter((t) => t.when)).toEqual([{ name: "issues_parent_view_extras", when: true }]);
    const onStatus = await query<{ name: string }>(
      env.services.db,
      sql`select t.tgname as name from pg_trigger t join pg_attribute a on a.attrelid = t.tgrelid and a.attnum = any (t.tgattr::int2[])
           where t.tgrelid = 'issues'::regclass and not t.tgisinternal and a.attname = 'status'`,
    );
    expect(onStatus).toEqual([{ name: "issues_status_changed" }]);
  });

  it("stay exact under concurrent claims, finishes and folds", async () => {
    if (testDriver !== "postgres") return; // PGlite runs one transaction at a time
    const org = await seedOrg(env.services, { prefix: "RACE" });
    const agents = [org.agents.alice.ctx, org.agents.bob.ctx, org.agents.carol.ctx];
    const made = await Promise.all(Array.from({ length: 18 }, (_, i) => saveIssue(agents[i % 3]!, task(`race ${i}`))));
    const work = made.map(async (issue, i) => {
      const ctx = agents[i % 3]!;
      const claim = await claimIssue(ctx, { identifier: issue.identifier });
      await saveIssue(ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    });
    const folds = Array.from({ length: 6 }, () => fold());
    await Promise.all([...work, ...folds]);
    await expectExact();
    await fold();
    await expectExact();
  });

  it("are recounted from scratch by retasc_issue_counts_reset, keeping what changes meanwhile", async () => {
    await env.services.db.execute(sql`update issue_status_counts set n = n + 5`);
    await expect(expectExact()).rejects.toThrow();
    const [row] = await query<{ total: string }>(env.services.db, sql`select retasc_issue_counts_reset() as total`);
    const [all] = await query<{ n: number }>(env.services.db, sql`select count(*)::int as n from issues`);
    expect(Number(row!.total)).toBe(Number(all!.n));
    await expectExact();
    const org = await seedOrg(env.services, { prefix: "AFT" });
    await saveIssue(org.agents.alice.ctx, task("after the reset"));
    await expectExact();
  });
});
