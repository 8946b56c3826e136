import { sql } from "drizzle-orm";
import type { Database, Db } from "../../db/client.ts";
import type { EventPublisher, RetascEvent } from "../context.ts";

export const EVENTS_CHANNEL = "retasc_events";

/**
 * Change events go out through PostgreSQL NOTIFY to every app instance, once the writing
 * transaction has committed (noticeAfterCommit). Payloads carry ids, never content.
 */
export const notifyPublisher: EventPublisher = {
  async publish(tx: Db, event: RetascEvent) {
    noticeAfterCommit(tx, [{ channel: EVENTS_CHANNEL, payload: JSON.stringify(event) }]);
  },
};

/** A NOTIFY a database function asks its caller to send once its transaction has committed. */
export interface Notice {
  channel: string;
  payload: string;
}

/**
 * Notices waiting for their transaction to commit, by transaction. One map per process: the app's
 * bundle and main.ts each hold a copy of this module, and a transaction opened by one may publish
 * through the other's publisher (the services main.ts builds).
 */
const REGISTRY = Symbol.for("retasc.events.afterCommit");
const afterCommit: WeakMap<Db, Notice[]> = ((globalThis as Record<symbol, unknown>)[REGISTRY] ??= new WeakMap()) as WeakMap<Db, Notice[]>;

/** A handle inside a transaction (it can roll back), not the pool. */
export const isTransaction = (db: Db) => typeof (db as { rollback?: unknown }).rollback === "function";

/**
 * Runs `run` in a transaction whose notices (change events, outbox wake-ups, what a dispatch
 * function returns) are sent once it has committed, never from inside it: a NOTIFY inside a
 * transaction takes PostgreSQL's global notify lock at commit and holds it through the commit's
 * flush, so every writing transaction of the cluster waits in line (0.44x the throughput of the
 * same transactions without it, measured with 16 clients). A transaction inside another keeps
 * its notices with the outer one's.
 */
export async function transactionWithNotices<T>(db: Db, run: (tx: Db) => Promise<T>): Promise<T> {
  const outer = afterCommit.get(db);
  let notices: Notice[] = [];
  const result = await db.transaction(async (tx) => {
    // A retried transaction starts again with nothing queued.
    notices = outer ?? [];
    afterCommit.set(tx, notices);
    return run(tx);
  });
  // Inside a transaction opened otherwise, they wait for that one's commit (or refuse, as a publish there would).
  if (!outer) isTransaction(db) ? noticeAfterCommit(db, notices) : sendNotices(db, notices);
  return result;
}

/** The notices queued on `tx` for after its commit, or null when it was not opened with transactionWithNotices. */
export const noticesAfterCommitOf = (tx: Db): Notice[] | null => afterCommit.get(tx) ?? null;

/**
 * Sends `notices` once `tx` has committed. Outside any transaction they go out at once
 * (batched). In a transaction not opened with transactionWithNotices this throws: that NOTIFY
 * would serialise the cluster's commits (server/events/after-commit.test.ts holds every path to it).
 */
export function noticeAfterCommit(tx: Db, notices: readonly Notice[]): void {
  const queued = afterCommit.get(tx);
  if (queued) {
    queued.push(...notices);
    return;
  }
  if (isTransaction(tx)) throw new Error("a notice from inside a transaction: open it with transactionWithNotices so it goes out after commit");
  sendNotices(tx, notices);
}

/** Sends notices on `db` now, in one statement (outside any transaction: sendNotices batches them). */
async function notifyAll(db: Db, notices: readonly Notice[]): Promise<void> {
  if (notices.length === 0) return;
  await db.execute(
    sql`select pg_notify(n.channel, n.payload) from json_to_recordset(${JSON.stringify(notices)}::json) as n(channel text, payload text)`,
  );
}

/** Notices waiting to be sent, per database. */
const pendingNotices = new WeakMap<Db, Notice[]>();

/** How long notices wait to be sent together: well under what a live view notices, long enough to batch a busy fleet. */
const NOTICE_BATCH_MS = 20;

/**
 * Sends the notices of a committed one-statement write (the dispatch functions of
 * db/migrations/0006) in a statement of their own: a NOTIFY inside the writing transaction
 * would hold PostgreSQL's global notify lock through its commit flush and serialise every
 * claim. What all callers send within NOTICE_BATCH_MS goes out as one statement (each is a
 * transaction of its own, so sending them one by one costs the database about as much as a
 * claim). Not awaited, and never failing the caller: the change is committed, and a lost
 * notice only delays a live view (the outbox relay also polls).
 */
export function sendNotices(db: Db, notices: readonly Notice[]): void {
  if (notices.length === 0) return;
  let batch = pendingNotices.get(db);
  if (!batch) {
    const queued: Notice[] = [];
    batch = queued;
    pendingNotices.set(db, queued);
    setTimeout(() => {
      pendingNotices.delete(db);
      notifyAll(db, queued).catch(() => {});
    }, NOTICE_BATCH_MS).unref();
  }
  batch.push(...notices);
}

export type EventListener = (event: RetascEvent) => void;

/**
 * Live streams one person, and one client address, may hold open at once on an instance: each
 * costs a connection, a subscription and a copy of every event, and a browser needs one per
 * Dash tab (and holds at most six per host over HTTP/1.1).
 */
export const STREAMS_PER_PERSON = 10;
export const STREAMS_PER_ADDRESS = 30;

/** Who holds a stream: the person, and their address when the edge knows it. */
export interface StreamHolder {
  person: string;
  address: string | null;
}

/**
 * One LISTEN connection per process fanned out to in-process subscribers (SSE streams).
 * Closing the hub ends every subscription, so open streams do not hold up a shutdown.
 */
export class EventHub {
  private readonly subscriptions = new Map<EventListener, (() => void) | undefined>();
  private readonly streamsHeld = new Map<string, number>();
  private stop: (() => Promise<void>) | null = null;

  async start(database: Database): Promise<void> {
    this.stop = await database.listen(EVENTS_CHANNEL, (payload) => {
      let event: RetascEvent;
      try {
        event = JSON.parse(payload) as RetascEvent;
      } catch {
        return;
      }
      for (const listener of this.subscriptions.keys()) listener(event);
    });
  }

  /** `onEnd` runs if the hub closes while subscribed. */
  subscribe(listener: EventListener, onEnd?: () => void): () => void {
    this.subscriptions.set(listener, onEnd);
    return () => this.subscriptions.delete(listener);
  }

  /**
   * Takes one of `holder`'s stream places, or returns null when the person or the address holds
   * all theirs. The returned release gives it back (calling it twice gives back one).
   */
  holdStream(holder: StreamHolder): (() => void) | null {
    const keys: [string, number][] = [[`person:${holder.person}`, STREAMS_PER_PERSON]];
    if (holder.address !== null) keys.push([`address:${holder.address}`, STREAMS_PER_ADDRESS]);
    if (keys.some(([key, cap]) => (this.streamsHeld.get(key) ?? 0) >= cap)) return null;
    for (const [key] of keys) this.streamsHeld.set(key, (this.streamsHeld.get(key) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      for (const [key] of keys) {
        const left = this.streamsHeld.get(key)! - 1;
        if (left === 0) this.streamsHeld.delete(key);
        else this.streamsHeld.set(key, left);
      }
    };
  }

  async close(): Promise<void> {
    const ends = [...this.subscriptions.values()];
    this.subscriptions.clear();
    for (const end of ends) end?.();
    await this.stop?.();
  }
}
