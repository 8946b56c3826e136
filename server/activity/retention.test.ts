import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { activity } from "../../db/schema/index.ts";
import { systemPrincipal } from "../context.ts";
import { saveIssue } from "../issues/index.ts";
import { useTestServices } from "../testing/database.ts";
import { testConfig } from "../testing/db.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { exportText } from "../transfer/testing.ts";
import { withPrincipal } from "../with-principal.ts";
import { pruneActivity } from "./retention.ts";

/**
 * The activity log's retention (decision 077): rows past ACTIVITY_RETENTION_DAYS go, oldest
 * written first, in bounded batches; the walk stops at the first row within the retention; 0
 * keeps every row; and the export carries exactly what is left. On PostgreSQL and PGlite.
 */
const env = useTestServices();
const DAY = 86_400_000;

async function rowsOf(orgId: string) {
  return query<{ id: number; kind: string }>(env.services.db, sql`select id::int as id, kind from activity where org_id = ${orgId} order by id`);
}

async function append(orgId: string, kind: string, ageDays: number, n = 1) {
  const createdAt = new Date(Date.now() - ageDays * DAY);
  await env.services.db.insert(activity).values(Array.from({ length: n }, () => ({ orgId, kind, createdAt })));
}

describe("pruneActivity", () => {
  it("deletes rows older than the retention in batches, stops at the first row within it, and the export keeps what is left", async () => {
    const org = await seedOrg(env.services, { prefix: "RET" });
    const ctx = org.agents.alice.ctx;
    await saveIssue(ctx, { title: "written long ago", work: true, changeType: "feat", noDependency: "retention" });
    // Everything so far is 100 days old; 10 more old rows after it, then two young ones, then
    // three old rows written after them (an import's history).
    await env.services.db.update(activity).set({ createdAt: new Date(Date.now() - 100 * DAY) }).where(eq(activity.orgId, org.orgId));
    await append(org.orgId, "old", 100, 10);
    await append(org.orgId, "young", 5, 2);
    await append(org.orgId, "imported", 400, 3);
    const before = await rowsOf(org.orgId);
    const oldCount = before.findIndex((r) => r.kind === "young");
    expect(oldCount).toBeGreaterThanOrEqual(11);

    // Bounded: two batches of four delete eight rows, the oldest.
    expect(await pruneActivity(env.services, { batch: 4, maxBatches: 2 })).toEqual({ deleted: 8, batches: 2 });
    expect(await rowsOf(org.orgId)).toEqual(before.slice(8));

    // The next run goes on from there and stops at the first young row.
    const second = await pruneActivity(env.services, { batch: 4 });
    expect(second.deleted).toBe(oldCount - 8);
    const left = await rowsOf(org.orgId);
    expect(left.map((r) => r.kind)).toEqual(["young", "young", "imported", "imported", "imported"]);

    // The export carries the rows the log still holds, no more.
    const exported = JSON.parse(await exportText(withPrincipal(env.services, systemPrincipal(org.orgId)))) as { activity: { kind: string }[] };
    expect(exported.activity.map((a) => a.kind)).toEqual(left.map((r) => r.kind));

    // Once the young rows age past the retention, the walk reaches the imported history too.
    await env.services.db.update(activity).set({ createdAt: new Date(Date.now() - 91 * DAY) }).where(eq(activity.kind, "young"));
    expect((await pruneActivity(env.services)).deleted).toBe(5);
    expect(await rowsOf(org.orgId)).toEqual([]);
  });

  it("keeps every row with a retention of 0, and a shorter retention reaches younger rows", async () => {
    const org = await seedOrg(env.services, { prefix: "KEEP" });
    await env.services.db.update(activity).set({ createdAt: new Date(Date.now() - 1_000 * DAY) }).where(eq(activity.orgId, org.orgId));
    await append(org.orgId, "old", 1_000, 3);
    await append(org.orgId, "recent", 10, 2);
    expect(await pruneActivity({ ...env.services, config: testConfig({ ACTIVITY_RETENTION_DAYS: "0" }) })).toEqual({ deleted: 0, batches: 0 });
    const all = (await rowsOf(org.orgId)).length;
    expect(all).toBeGreaterThanOrEqual(5);
    expect((await pruneActivity({ ...env.services, config: testConfig({ ACTIVITY_RETENTION_DAYS: "7" }) })).deleted).toBe(all);
    expect(await rowsOf(org.orgId)).toEqual([]);
  });

  it("refuses a retention that is not a whole number of days from 0", () => {
    expect(() => testConfig({ ACTIVITY_RETENTION_DAYS: "-1" })).toThrow(/ACTIVITY_RETENTION_DAYS must be at least 0/);
    expect(() => testConfig({ ACTIVITY_RETENTION_DAYS: "1.5" })).toThrow(/ACTIVITY_RETENTION_DAYS must be a whole number/);
    expect(testConfig().ACTIVITY_RETENTION_DAYS).toBe(90);
  });
});
