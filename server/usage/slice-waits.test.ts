import postgres from "postgres";
import { expect, test } from "vitest";
import { testDriver } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { billingOnConfig, setBalance } from "./testing.ts";

/**
 * The stall near the last credit (issue 28, decision 044): charges that find every covering
 * slice held wait for one. A waited-for slice that its holder drained stays locked by the waiter
 * (PostgreSQL keeps the lock of a row its recheck skips), which then waits for the next slice; from
 * random starts two waiters held one drained slice each and waited for the other's: a deadlock,
 * found only after deadlock_timeout, and the charge's whole write rerun. Here two writes hold the
 * only two covering slices and drain them; eight charges wait; none may deadlock.
 */
const env = useTestServices({ config: billingOnConfig() });
const PRICE = 7_000;
const WAITERS = 8;

test.skipIf(testDriver !== "postgres")("charges waiting for drained slices never deadlock each other", async () => {
  const org = await seedOrg(env.services, { prefix: "SLW" });
  const { orgId, userId, keyId, runtime } = org.agents.alice.principal;
  await setBalance(env.services.db, orgId, 2 * PRICE);
  const sql = postgres(env.tdb.url!, { max: WAITERS + 3, onnotice: () => {} });
  try {
    // Exactly two slices cover one charge, far apart: 2 and 10.
    await sql`update billing_credit_slices set given_remaining = case when slice in (2, 10) then ${PRICE}::bigint else 0 end, bought_remaining = 0
               where org_id = ${orgId}`;
    const charge = (tx: postgres.Sql | postgres.TransactionSql) =>
      tx`select retasc_charge(${orgId}, ${userId}, ${keyId}, ${runtime}, 'save_issue', 'bookkeeping', ${PRICE}::bigint, null, true, now()) as outcome`.then(
        ([row]) => row!.outcome as string,
      );
    const holders = [0, 1].map(() => {
      let commit!: () => void;
      let charged!: (outcome: string) => void;
      const outcome = new Promise<string>((resolve) => (charged = resolve));
      const done = sql.begin(async (tx) => {
        charged(await charge(tx));
        await new Promise<void>((resolve) => (commit = resolve));
      });
      return { outcome, commit: () => commit(), done };
    });
    for (const holder of holders) expect(await holder.outcome).toBe("charged");

    const waiters = Array.from({ length: WAITERS }, () => charge(sql).then((outcome) => ({ outcome }), (error: Error) => ({ outcome: error.message })));
    for (;;) {
      const [{ n }] = await sql`select count(*)::int as n from pg_stat_activity
                                 where datname = current_database() and wait_event_type = 'Lock' and query like '%retasc_charge%'`;
      if (n >= WAITERS) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // The holders commit one after the other, each leaving its slice drained.
    holders[0]!.commit();
    await holders[0]!.done;
    // A moment for the waiters to pass the first drained slice and wait on the second (nothing
    // outside tells when each has); the outcome below must be the same however far they got.
    await new Promise((r) => setTimeout(r, 200));
    holders[1]!.commit();
    await holders[1]!.done;

    // Nothing is left to charge: each waiter is refused, none fails.
    expect(await Promise.all(waiters)).toEqual(Array.from({ length: WAITERS }, () => ({ outcome: "BILLING_INACTIVE" })));
  } finally {
    await sql.end();
  }
});
