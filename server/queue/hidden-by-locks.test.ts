import { sql } from "drizzle-orm";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { openPostgres, query, type Db } from "../../db/client.ts";
import { saveIssue } from "../issues/index.ts";
import { backfillStep } from "../issues/similar.ts";
import { useTestServices } from "../testing/database.ts";
import { testDriver } from "../testing/db.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { nextIssue } from "./index.ts";

/**
 * A pick skips rows another transaction holds locked, so whatever locks an issue it does not
 * claim hides that issue from every other agent for as long as its transaction runs, and they are
 * handed the work behind it. The swarm's order check caught two such locks in CI: a capped poll
 * (decision 076, amended) and the duplicate gate's backfill (decision 066, amended). Each test
 * holds the lock in an open transaction on a connection of its own while another agent picks.
 */
const env = useTestServices();

async function twoIssues(org: SeededOrg) {
  const top = await saveIssue(org.agents.alice.ctx, { title: "urgent parser crash", work: true, changeType: "fix", noDependency: "standalone", priority: 1 });
  await saveIssue(org.agents.alice.ctx, { title: "later cache tuning", work: true, changeType: "perf", noDependency: "standalone", priority: 4 });
  return (top as { identifier: string }).identifier;
}

const claimed = (reply: Awaited<ReturnType<typeof nextIssue>>) => ("identifier" in reply ? reply.identifier : null);

describe.skipIf(testDriver !== "postgres")("a pick is not hidden from", () => {
  it("a poll refused for its key's cap, while that poll's transaction is still open", async () => {
    const org = await seedOrg(env.services);
    const { alice, bob } = org.agents;
    const top = await twoIssues(org);
    // Alice's key polls with a cap of 0 (it holds its cap) in a transaction left open, as a batch of polls does.
    const held = postgres(env.tdb.url!, { max: 1, onnotice: () => {} });
    try {
      const answer = await held.begin(async (tx) => {
        const [row] = await tx`select retasc_next_issue(${org.orgId}, null, false, false, 0, ${alice.userId}, ${alice.principal.keyId},
          'capped', now(), 'lease-capped', 'hash-capped', 60000, null, null, null) as result`;
        return { capped: row!.result as { outcome: string }, bobs: await nextIssue(bob.ctx, {}) };
      });
      expect(answer.capped.outcome).toBe("cap");
      expect(claimed(answer.bobs)).toBe(top);
    } finally {
      await held.end({ timeout: 5 });
    }
  });

  it("the duplicate gate's backfill indexing the issues, while its transaction is still open", async () => {
    const org = await seedOrg(env.services);
    const top = await twoIssues(org);
    // As for issues written before the index: no terms, and the org not walked yet.
    await query(env.services.db, sql`delete from issue_terms where org_id = ${org.orgId}`);
    await query(env.services.db, sql`delete from issue_term_backfills where org_id = ${org.orgId}`);
    const cipher = await env.services.keyring.forOrg(env.services.db, org.orgId);
    const other = await openPostgres(env.tdb.url!, { max: 1 });
    try {
      const bobs = await other.db.transaction(async (outer) => {
        expect(await backfillStep(outer as unknown as Db, cipher, org.orgId)).toBe(2);
        return nextIssue(org.agents.bob.ctx, {});
      });
      expect(claimed(bobs)).toBe(top);
      const [terms] = await query<{ n: number }>(env.services.db, sql`select count(*)::int as n from issue_terms where org_id = ${org.orgId}`);
      expect(terms!.n).toBeGreaterThan(0);
    } finally {
      await other.close();
    }
  });
});
