import { sql, type SQL } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { retryingConflicts } from "../../db/retry.ts";
import { batching, inCallOrder } from "./batching.ts";

/**
 * The hot path's two batch functions, in the order one statement calls them. Finishes go first,
 * so a claim in the same statement can take work a finish just unblocked; nothing else depends
 * on the order, as each call is checked on its own as if it came alone.
 */
const FUNCTIONS = ["retasc_finishes", "retasc_next_issues"] as const;
export type HotBatchFunction = (typeof FUNCTIONS)[number];

/** Every call carries its caller's clock (ISO, UTC). */
interface Timed {
  now: string;
}

interface Tagged {
  fn: HotBatchFunction;
  call: Timed;
}

/**
 * How each function's calls are put together before they leave, given the statement's instant:
 * the latest clock of all its calls (a claim batch takes it, so that no claim is recorded before a
 * finish its statement ran first).
 */
const prepares = new Map<HotBatchFunction, (calls: Timed[], instant: string) => Timed[]>();

/**
 * Claims and finishes share one lane per pool (decision 124): the calls of both that wait while a
 * batch runs leave together as one statement, `select retasc_finishes($1), retasc_next_issues($2)`
 * with only the functions that have calls, so they share a round trip, a transaction and its
 * commit's flush. Over /mcp, where each call is its own request, a batch holds one to three
 * calls, and the commit and the statement's fixed costs are about two fifths of PostgreSQL's work
 * for a batch of one. A failed batch reruns its calls one by one (`batching`), each alone.
 */
const together = batching<Tagged, unknown>(async (db, tagged) => {
  const byFunction = new Map<HotBatchFunction, { places: number[]; calls: Timed[] }>();
  const instant = tagged.reduce((latest, { call }) => (call.now > latest ? call.now : latest), tagged[0]!.call.now);
  tagged.forEach(({ fn, call }, place) => {
    const group = byFunction.get(fn) ?? { places: [], calls: [] };
    group.places.push(place);
    group.calls.push(call);
    byFunction.set(fn, group);
  });
  const present = FUNCTIONS.filter((fn) => byFunction.has(fn));
  const prepared = Object.fromEntries(present.map((fn) => {
    const calls = byFunction.get(fn)!.calls;
    return [fn, prepares.get(fn)?.(calls, instant) ?? calls];
  }));
  const [row] = await retryingConflicts(() => query<Record<HotBatchFunction, { index: number }[]>>(db, hotBatchStatement(prepared)));
  const results: unknown[] = new Array(tagged.length);
  for (const fn of present) {
    const { places } = byFunction.get(fn)!;
    inCallOrder(row![fn]).forEach((result, k) => {
      results[places[k]!] = result;
    });
  }
  return results;
});

/**
 * The statement for calls of the hot functions, by function, as they leave: only the functions
 * with calls, in FUNCTIONS' order, each result in a column named after its function. Exported for
 * the benches that send it themselves (bench/claim-loop.ts).
 */
export function hotBatchStatement(calls: Partial<Record<HotBatchFunction, readonly unknown[]>>): SQL {
  const columns = FUNCTIONS.filter((fn) => (calls[fn]?.length ?? 0) > 0).map(
    (fn) => sql`${sql.raw(fn)}(${JSON.stringify(calls[fn])}::jsonb) as ${sql.raw(fn)}`,
  );
  return sql`select ${sql.join(columns, sql`, `)}`;
}

/**
 * A call of `fn` that leaves with the other hot calls waiting on its pool; `prepare` puts a
 * batch's calls of `fn` together before they leave, given the statement's instant. Results come
 * back tagged with their call's index within `fn`'s calls, as the database functions return them.
 */
export function hotBatchCall<Call extends Timed, Result>(fn: HotBatchFunction, prepare?: (calls: Call[], instant: string) => Call[]) {
  // Each function is registered once, with its own call type; the runner hands it back only its own calls.
  if (prepare) prepares.set(fn, prepare as unknown as (calls: Timed[], instant: string) => Timed[]);
  return (db: Db, call: Call) => together(db, { fn, call }) as Promise<Result>;
}
