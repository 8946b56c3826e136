import type { Db } from "../../db/client.ts";

/**
 * How long a batch in flight holds back the next one. Past it the calls waiting go out anyway,
 * so one slow batch (a lock wait, a cold plan) never stalls a process's claims for longer.
 */
export const BATCH_HOLD_MS = 25;

/**
 * Application-side group commit: calls of one database function go to the database together as
 * one statement, so a busy fleet's claims (or finishes) share a round trip and a commit instead
 * of paying one each. Per pool, one batch is in flight at a time: the calls that arrive in one
 * turn of the event loop, or while a batch runs, leave together when it ends (or once it has run
 * BATCH_HOLD_MS). A lone call waits for no one (one turn is well under a millisecond); under load
 * the batches grow with it, which is what keeps PostgreSQL's work per call down when calls come
 * one per HTTP request (decision 118). `runBatch` gets the calls in arrival order and returns
 * their results in the same order; if a batch fails, each call runs on its own, so one call's
 * failure is never another's. A batch whose charge would wait for a credit slice while it holds
 * another fails this way on purpose (lock_not_available, decision 079).
 */
export function batching<Call, Result>(runBatch: (db: Db, calls: readonly Call[]) => Promise<Result[]>) {
  type Waiting = { call: Call; resolve: (result: Result) => void; reject: (error: unknown) => void }[];
  /** One pool's calls: those waiting to leave, and whether a batch in flight holds them back. */
  interface Lane { waiting: Waiting; holding: boolean; scheduled: boolean }
  const lanes = new Map<Db, Lane>();

  async function run(db: Db, waiting: Waiting) {
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

  function send(db: Db, lane: Lane) {
    lane.scheduled = false;
    if (lane.holding || lane.waiting.length === 0) return;
    const waiting = lane.waiting;
    lane.waiting = [];
    lane.holding = true;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      clearTimeout(hold);
      lane.holding = false;
      if (lane.waiting.length > 0) send(db, lane);
      else lanes.delete(db);
    };
    const hold = setTimeout(release, BATCH_HOLD_MS);
    void run(db, waiting).finally(release);
  }

  return (db: Db, call: Call): Promise<Result> =>
    new Promise((resolve, reject) => {
      let lane = lanes.get(db);
      if (!lane) lanes.set(db, (lane = { waiting: [], holding: false, scheduled: false }));
      lane.waiting.push({ call, resolve, reject });
      if (lane.holding || lane.scheduled) return;
      lane.scheduled = true;
      const scheduled = lane;
      setImmediate(() => send(db, scheduled));
    });
}

/** Results of a batch function (each tagged with its call's index), back in the order of the calls. */
export const inCallOrder = <T extends { index: number }>(results: T[]): T[] => [...results].sort((a, b) => a.index - b.index);
