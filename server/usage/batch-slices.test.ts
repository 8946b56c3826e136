import postgres from "postgres";
import { expect, test } from "vitest";
import { retryingConflicts } from "../../db/retry.ts";
import { sha256 } from "../crypto/index.ts";
import { saveIssue } from "../issues/index.ts";
import { newId } from "../orgs/index.ts";
import { nextIssue } from "../queue/next.ts";
import { testDriver } from "../testing/db.ts";
import { countedPool, deadlocks, deadlocksOnceClosed } from "../testing/deadlocks.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { rateCard } from "./rate-card.ts";
import { billingOnConfig, setBalance } from "./testing.ts";

/**
 * A batch of claims (retasc_next_issues) or finishes (retasc_finishes) charges once per call in
 * one transaction, so from its second charge on it holds a slice. Before decision 079 such a
 * charge waited for a covering slice, or locked every slice to consolidate, while holding it:
 * two batches, each holding the slice the other waited for, deadlocked (the last-credit race
 * saw it once). A charge holding a slice now never waits for another: the batch gives way with
 * lock_not_available and its calls rerun alone (server/issues/batching.ts), holding nothing.
 */
const env = useTestServices({ config: billingOnConfig() });
const CLAIM = rateCard.dispatch;
const FINISH = rateCard.bookkeeping;
const postgresOnly = testDriver !== "postgres";

type Sql = postgres.Sql | postgres.TransactionSql;

async function fileWork(org: SeededOrg, n: number) {
  for (let i = 0; i < n; i += 8) {
    await Promise.all(Array.from({ length: Math.min(8, n - i) }, (_, j) =>
      saveIssue(org.agents.alice.ctx, { title: `Task ${i + j}`, work: true, changeType: "feat", noDependency: "independent" })));
  }
}

/** Claims n issues through the service, for the finishes to come (five claims a key, under its cap). */
async function claimed(org: SeededOrg, n: number) {
  const keys = await Promise.all(Array.from({ length: Math.ceil(n / 5) }, (_, k) => org.agentFor("alice", `runtime-${k}`)));
  const replies = await Promise.all(
    Array.from({ length: n }, (_, i) => nextIssue(keys[Math.floor(i / 5)]!.ctx, {}) as Promise<{ identifier: string; claimToken: string }>),
  );
  return replies.map(({ identifier, claimToken }) => ({ identifier, claimToken }));
}

/** The batch functions' call arguments, as server/queue/next.ts and server/issues/finish.ts send them. */
function calls(org: SeededOrg) {
  const { orgId, userId, keyId, runtime } = org.agents.alice.principal;
  const now = new Date().toISOString();
  return {
    claim: () => ({
      orgId, projectId: null, projectIds: null, allLanes: true, checkSla: false, cap: 1_000, userId, keyId, runtime, now,
      leaseId: newId(), tokenHash: sha256(newId()), ttlMs: 600_000, sessionId: null,
      charge: { tool: "next_issue", tier: "dispatch", microCredits: CLAIM },
    }),
    finish: (held: { identifier: string; claimToken: string }) => ({
      orgId, identifier: held.identifier, tokenHash: sha256(held.claimToken), now, userId, keyId, runtime,
      charge: { tool: "save_issue", tier: "bookkeeping", microCredits: FINISH },
    }),
  };
}

const claims = (tx: Sql, batch: object[]) =>
  tx`select retasc_next_issues(${JSON.stringify(batch)}::text::jsonb) as results`.then(([row]) => row!.results as { outcome: string }[]);
const finishes = (tx: Sql, batch: object[]) =>
  tx`select retasc_finishes(${JSON.stringify(batch)}::text::jsonb) as results`.then(([row]) => row!.results as { outcome: string }[]);
const waitingForLock = (sql: Sql, fn: string) =>
  sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like ${`%${fn}%`}`.then(
    ([row]) => row!.n > 0,
  );
/** Leaves the org's credit in the slices named, the others empty. */
const slices = (sql: Sql, orgId: string, credit: Record<number, number>) =>
  sql`update billing_credit_slices set given_remaining = coalesce((${JSON.stringify(credit)}::text::jsonb->>slice::text)::bigint, 0), bought_remaining = 0
       where org_id = ${orgId}`;

test.skipIf(postgresOnly)("a batch holding a slice gives way rather than wait for one another batch holds", async () => {
  const org = await seedOrg(env.services, { prefix: "BSL" });
  await setBalance(env.services.db, org.orgId, 1_000_000);
  await fileWork(org, 8);
  const held = await claimed(org, 5);
  const call = calls(org);
  const sql = countedPool(env.tdb.url!, 4);
  try {
    const before = await deadlocks(sql);
    // Two slices. Both cover a claim: the claims' first charge drains one, the finishes' first
    // two the other, and each batch waits for the other's. Or the second covers only a finish:
    // the claims consolidate, locking every slice, while the finishes wait for the claims'.
    const cases = [
      { credit: { 2: CLAIM, 10: CLAIM }, first: held.slice(0, 2), second: held[2]! },
      { credit: { 2: CLAIM, 10: FINISH }, first: held.slice(3, 4), second: held[4]! },
    ];
    for (const { credit, first, second } of cases) {
      await slices(sql, org.orgId, credit);
      let finishesHold!: () => void;
      const holding = new Promise<void>((resolve) => (finishesHold = resolve));
      // The batches' first charges: each transaction then holds a slice, as a batch statement does after its first call.
      const claimsTx = sql.begin(async (tx) => {
        expect((await claims(tx, [call.claim()]))[0]!.outcome).toBe("claimed");
        await holding;
        return claims(tx, [call.claim()]);
      });
      const claimsDone = claimsTx.then(() => {}, () => {});
      const finishesTx = sql.begin(async (tx) => {
        await new Promise((r) => setTimeout(r, 100));
        expect((await finishes(tx, first.map(call.finish))).map((r) => r.outcome)).toEqual(first.map(() => "finished"));
        finishesHold();
        // Once the claims' second charge has given way, or waits for this transaction's slice.
        while (!(await Promise.race([claimsDone.then(() => true), waitingForLock(sql, "retasc_next_issues")]))) await new Promise((r) => setTimeout(r, 20));
        return finishes(tx, [call.finish(second)]);
      });
      // The claims' second charge may not wait while it holds a slice: it gives way at once.
      await expect(claimsTx).rejects.toMatchObject({ code: "55P03" });
      expect((await finishesTx).map((r) => r.outcome)).toEqual(["finished"]);
    }
    expect(await deadlocksOnceClosed(sql, env.tdb.url!)).toBe(before);
  } finally {
    await sql.end();
  }
});

test.skipIf(postgresOnly)("a charge holding a slice it passed over gives way rather than wait for another", async () => {
  // A pick with SKIP LOCKED that follows a slice changed while it ran locks the new version and
  // then passes it over if it no longer covers; PostgreSQL keeps that lock. Such a charge holds
  // a slice its setting does not name. Two of them, each consolidating, locked every slice in
  // order up to the other's passed-over one. Here each passed-over lock is taken by hand.
  const org = await seedOrg(env.services, { prefix: "BSP" });
  await setBalance(env.services.db, org.orgId, 1_000_000);
  await fileWork(org, 2);
  const call = calls(org);
  const sql = countedPool(env.tdb.url!, 4);
  try {
    const before = await deadlocks(sql);
    // No slice covers a claim; two together do, so a charge consolidates.
    await slices(sql, org.orgId, { 5: Math.ceil(CLAIM / 2), 12: Math.ceil(CLAIM / 2) });
    const passedOver = (tx: Sql, slice: number) =>
      tx`select 1 from billing_credit_slices where org_id = ${org.orgId} and slice = ${slice} for update`;
    let bothHold!: () => void;
    const holding = new Promise<void>((resolve) => (bothHold = resolve));
    let held = 0;
    const charge = (slice: number) =>
      sql.begin(async (tx) => {
        await passedOver(tx, slice);
        if (++held === 2) bothHold();
        await holding;
        return claims(tx, [call.claim()]);
      });
    // Each charge, consolidating, would lock every slice in order up to the other's passed-over
    // one and wait there: both give way instead, to rerun holding nothing.
    const outcomes = await Promise.allSettled([charge(3), charge(10)]);
    expect(outcomes.map((o) => o.status === "rejected" && (o.reason as { code?: string }).code)).toEqual(["40001", "40001"]);
    expect((await claims(sql, [call.claim()]))[0]!.outcome).toBe("claimed");
    expect(await deadlocksOnceClosed(sql, env.tdb.url!)).toBe(before);
  } finally {
    await sql.end();
  }
});

test.skipIf(postgresOnly)("concurrent batches of claims and finishes spend an org's last few slices without a deadlock", async () => {
  const org = await seedOrg(env.services, { prefix: "BSR" });
  const ROUNDS = 4;
  const BATCHES = 8;
  const PER_BATCH = 3;
  await setBalance(env.services.db, org.orgId, 10_000_000);
  await fileWork(org, ROUNDS * BATCHES * PER_BATCH);
  const held = await claimed(org, (ROUNDS * BATCHES * PER_BATCH) / 2);
  const call = calls(org);
  const sql = countedPool(env.tdb.url!, BATCHES + 2);
  try {
    const before = await deadlocks(sql);
    const [{ mark }] = await sql`select coalesce(max(id), 0)::bigint as mark from billing_charges`;
    const [{ leasesBefore }] = await sql`select count(*)::int as "leasesBefore" from leases where org_id = ${org.orgId}`;
    let gaveWay = 0;
    // Every connection open before the first round, so its batches start together.
    await Promise.all(Array.from({ length: BATCHES }, () => sql`select pg_sleep(0.05)`));
    for (let round = 0; round < ROUNDS; round++) {
      // A few slices, each covering a call or two, and less in all than the round would spend.
      await slices(sql, org.orgId, { 1: CLAIM + FINISH, 4: CLAIM, 6: 2 * FINISH, 9: CLAIM + FINISH, 13: CLAIM, 15: FINISH });
      await Promise.all(
        Array.from({ length: BATCHES }, async (_, b) => {
          const batch = b % 2 === 0
            ? Array.from({ length: PER_BATCH }, () => call.claim())
            : held.splice(0, PER_BATCH).map((h) => call.finish(h));
          // As server/queue/next.ts and server/issues/finish.ts send them: rerun on a conflict.
          const run = (part: object[]) => retryingConflicts(() => (b % 2 === 0 ? claims(sql, part) : finishes(sql, part)));
          // As server/issues/batching.ts does: a failed batch reruns each of its calls on its own.
          await run(batch).catch(async (error: { code?: string }) => {
            expect(error.code).toBe("55P03");
            gaveWay++;
            await Promise.all(batch.map((one) => run([one])));
          });
        }),
      );
    }
    console.log(`batch slices: ${gaveWay} of ${ROUNDS * BATCHES} batches gave way`);
    // Never below zero, and every charge belongs to a committed write.
    const [{ negative }] = await sql`select count(*)::int as negative from billing_credit_slices where given_remaining < 0 or bought_remaining < 0`;
    expect(negative).toBe(0);
    const charges = await sql`select tool, count(*)::int as n from billing_charges where org_id = ${org.orgId} and id > ${mark} group by tool`;
    const [{ leases }] = await sql`select count(*)::int as leases from leases where org_id = ${org.orgId}`;
    const [{ done }] = await sql`select count(*)::int as done from activity where org_id = ${org.orgId} and kind = 'finished'`;
    expect(charges.find((row) => row.tool === "next_issue")?.n ?? 0).toBe(leases - leasesBefore);
    expect(charges.find((row) => row.tool === "save_issue")?.n ?? 0).toBe(done);
    expect(await deadlocksOnceClosed(sql, env.tdb.url!)).toBe(before);
  } finally {
    await sql.end();
  }
});
