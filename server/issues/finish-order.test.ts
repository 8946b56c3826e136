import { expect, test } from "vitest";
import { sha256 } from "../crypto/index.ts";
import { nextIssue } from "../queue/next.ts";
import { testDriver } from "../testing/db.ts";
import { countedPool, deadlocks, deadlocksOnceClosed } from "../testing/deadlocks.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { saveIssue } from "./index.ts";

/**
 * A batch of finishes (retasc_finishes) takes away one open blocker from each issue its finishes
 * unblock. Finishing in issue order, two batches could reach the same two blocked issues in
 * opposite orders, each holding the one the other needed next: a deadlock, which PostgreSQL
 * breaks after a second and the product reruns. The batch now locks every issue it unblocks, in
 * id order, before it finishes anything.
 */
const env = useTestServices();
const ROUNDS = 12;

test.skipIf(testDriver !== "postgres")("two batches unblocking the same issues in opposite orders finish without a deadlock", async () => {
  const org = await seedOrg(env.services, { prefix: "FOR" });
  const alice = org.agents.alice;
  const file = (title: string, blockedBy?: string[]) =>
    saveIssue(alice.ctx, { title, work: true, changeType: "feat", ...(blockedBy ? { blockedBy } : { noDependency: "independent" }) });
  // Per round four finishes a < b < c < d (the order a batch finishes in) and two issues they
  // unblock: one blocked by a and d, the other by b and c. Batch [a, b] reaches them in one
  // order, batch [c, d] in the other.
  const sql = countedPool(env.tdb.url!, 4);
  try {
    const rounds: string[][] = [];
    const gated: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const filed = await Promise.all([0, 1, 2, 3].map((n) => file(`Source ${round}.${n}`)));
      const byId = await sql`select identifier from issues where org_id = ${org.orgId} and identifier = any(${filed.map((f) => f.identifier)}) order by id`;
      const sources = byId.map((row) => row.identifier as string);
      gated.push((await file(`Gated ${round}.ad`, [sources[0]!, sources[3]!])).identifier);
      gated.push((await file(`Gated ${round}.bc`, [sources[1]!, sources[2]!])).identifier);
      rounds.push(sources);
    }
    // Every source claimed (the gated issues wait for their blockers), five claims a key.
    const tokens = new Map<string, { token: string; keyId: string }>();
    for (let k = 0; tokens.size < ROUNDS * 4; k++) {
      const agent = await org.agentFor("alice", `runtime-${k}`);
      for (let i = 0; i < 5 && tokens.size < ROUNDS * 4; i++) {
        const claim = (await nextIssue(agent.ctx, {})) as { identifier: string; claimToken: string };
        tokens.set(claim.identifier, { token: claim.claimToken, keyId: agent.principal.keyId! });
      }
    }
    const before = await deadlocks(sql);
    const finish = (identifier: string) => ({
      orgId: org.orgId, identifier, tokenHash: sha256(tokens.get(identifier)!.token), now: new Date().toISOString(),
      userId: alice.principal.userId, keyId: tokens.get(identifier)!.keyId, runtime: "test",
    });
    const batch = (identifiers: string[]) =>
      sql`select retasc_finishes(${JSON.stringify(identifiers.map(finish))}::text::jsonb) as results`.then(
        ([row]) => (row!.results as { outcome: string }[]).map((r) => r.outcome),
      );
    for (const [a, b, c, d] of rounds) {
      const outcomes = await Promise.allSettled([batch([a!, b!]), batch([c!, d!])]);
      expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : (o.reason as { code?: string }).code))).toEqual([
        ["finished", "finished"],
        ["finished", "finished"],
      ]);
    }
    // Every gated issue is unblocked, exactly once per blocker.
    const open = await sql`select open_blocker_count::int as n from issues where org_id = ${org.orgId} and identifier = any(${gated})`;
    expect(open.map((row) => row.n)).toEqual(gated.map(() => 0));
    expect(await deadlocksOnceClosed(sql, env.tdb.url!)).toBe(before);
  } finally {
    await sql.end();
  }
});
