import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { useTestServices } from "../testing/database.ts";
import { BATCH_HOLD_MS, batching, inCallOrder } from "./batching.ts";

const env = useTestServices();

describe("batching calls of a database function", () => {
  it("sends the calls of one turn as one statement, and answers each in its order", async () => {
    const statements: number[][] = [];
    const double = batching<number, number>(async (db, calls) => {
      statements.push([...calls]);
      const rows = await query<{ n: number }>(db, sql`select (x * 2)::int as n from unnest(${`{${calls.join(",")}}`}::int[]) with ordinality as t(x, i) order by i`);
      return rows.map((r) => Number(r.n));
    });
    const db = env.services.db;
    expect(await Promise.all([1, 2, 3].map((n) => double(db, n)))).toEqual([2, 4, 6]);
    expect(await double(db, 5)).toBe(10);
    expect(statements).toEqual([[1, 2, 3], [5]]);
  });

  it("runs each call of a failed batch alone, so one bad call fails only itself", async () => {
    const statements: string[][] = [];
    const check = batching<string, string>(async (db, calls) => {
      statements.push([...calls]);
      // A real statement error for the bad call: the cast fails in the database.
      const rows = await query<{ v: string }>(db, sql`select (v::int)::text as v from unnest(${`{${calls.join(",")}}`}::text[]) as t(v)`);
      return rows.map((r) => r.v);
    });
    const db = env.services.db;
    const results = await Promise.allSettled(["1", "oops", "3"].map((v) => check(db, v)));
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : "rejected"))).toEqual(["1", "rejected", "3"]);
    expect(statements).toEqual([["1", "oops", "3"], ["1"], ["oops"], ["3"]]);
  });

  it("puts results tagged with their call's index back in call order", () => {
    expect(inCallOrder([{ index: 2, v: "c" }, { index: 0, v: "a" }, { index: 1, v: "b" }]).map((r) => r.v)).toEqual(["a", "b", "c"]);
  });
});

describe("one batch in flight per pool", () => {
  /** A batch function whose batches end when the test says so, recording each batch's calls. */
  function gated() {
    const batches: number[][] = [];
    const gates: (() => void)[] = [];
    const fn = batching<number, number>(async (_db, calls) => {
      batches.push([...calls]);
      await new Promise<void>((resolve) => gates.push(resolve));
      return calls.map((n) => n * 10);
    });
    return { fn, batches, gates };
  }
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it("holds the calls that arrive while a batch runs, and sends them together when it ends", async () => {
    const { fn, batches, gates } = gated();
    const db = env.services.db;
    const first = fn(db, 1);
    await turn();
    const later = [2, 3, 4].map(async (n) => {
      await new Promise((resolve) => setTimeout(resolve, n));
      return fn(db, n);
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Three turns apart, none went out while the first batch ran.
    expect(batches).toEqual([[1]]);
    gates.shift()!();
    expect(await first).toBe(10);
    await turn();
    expect(batches).toEqual([[1], [2, 3, 4]]);
    gates.shift()!();
    expect(await Promise.all(later)).toEqual([20, 30, 40]);
  });

  it("lets the next batch go once one has run BATCH_HOLD_MS, and keeps pools apart", async () => {
    const { fn, batches, gates } = gated();
    const db = env.services.db;
    const other = {} as typeof db;
    const slow = fn(db, 1);
    await turn();
    const waiting = fn(db, 2);
    const elsewhere = fn(other, 3);
    await turn();
    // Another pool's call is not held by this pool's batch.
    expect(batches).toEqual([[1], [3]]);
    await new Promise((resolve) => setTimeout(resolve, BATCH_HOLD_MS + 10));
    expect(batches).toEqual([[1], [3], [2]]);
    gates.forEach((open) => open());
    expect(await Promise.all([slow, waiting, elsewhere])).toEqual([10, 20, 30]);
  });
});
