import type { Db } from "../../db/client.ts";

/**
 * Application-side group commit: the calls of one database function that arrive in the same
 * turn of the event loop go to the database as one statement, so a busy fleet's claims (or
 * finishes) share a round trip and a commit instead of paying one each. A lone call waits for
 * no one (one turn is well under a millisecond). `runBatch` gets the calls in arrival order
 * and returns their results in the same order; if a batch fails, each call runs on its own,
 * so one call's failure is never another's. A batch whose charge would wait for a credit slice
 * while it holds another fails this way on purpose (lock_not_available, decision 079).
 */
export function batching<Call, Result>(runBatch: (db: Db, calls: readonly Call[]) => Promise<Result[]>) {
  type Waiting = { call: Call; resolve: (result: Result) => void; reject: (error: unknown) => void }[];
  const pending = new Map<Db, Waiting>();

  async function flush(db: Db, waiting: Waiting) {
    try {
      const results = await runBatch(db, waiting.map((w) => w.call));
      waiting.forEach((w, index) => w.resolve(results[index]!));
    } catch (error) {
      if (waiting.length === 1) return waiting[0]!.reject(error);
      await Promise.all(
        waiting.map((w) => runBatch(db, [w.call]).then(([result]) => w.resolve(result!), w.reject)),
      );
    }
  }

  return (db: Db, call: Call): Promise<Result> =>
    new Promise((resolve, reject) => {
      let waiting = pending.get(db);
      if (!waiting) {
        const queued: Waiting = [];
        waiting = queued;
        pending.set(db, queued);
        setImmediate(() => {
          pending.delete(db);
          void flush(db, queued);
        });
      }
      waiting.push({ call, resolve, reject });
    });
}

/** Results of a batch function (each tagged with its call's index), back in the order of the calls. */
export const inCallOrder = <T extends { index: number }>(results: T[]): T[] => [...results].sort((a, b) => a.index - b.index);
