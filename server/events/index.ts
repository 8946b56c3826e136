import { sql } from "drizzle-orm";
import type { Database, Db } from "../../db/client.ts";
import type { EventPublisher, RetascEvent } from "../context.ts";

export const EVENTS_CHANNEL = "retasc_events";

/**
 * Change events go out through PostgreSQL NOTIFY inside the writing transaction, so they
 * are delivered on commit only, to every app instance. Payloads carry ids, never content.
 */
export const notifyPublisher: EventPublisher = {
  async publish(tx: Db, event: RetascEvent) {
    await tx.execute(sql`select pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify(event)})`);
  },
};

export type EventListener = (event: RetascEvent) => void;

/**
 * One LISTEN connection per process fanned out to in-process subscribers (SSE streams).
 * Closing the hub ends every subscription, so open streams do not hold up a shutdown.
 */
export class EventHub {
  private readonly subscriptions = new Map<EventListener, (() => void) | undefined>();
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

  async close(): Promise<void> {
    const ends = [...this.subscriptions.values()];
    this.subscriptions.clear();
    for (const end of ends) end?.();
    await this.stop?.();
  }
}
