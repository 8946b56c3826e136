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

/** One LISTEN connection per process fanned out to in-process subscribers (SSE streams). */
export class EventHub {
  private readonly listeners = new Set<EventListener>();
  private stop: (() => Promise<void>) | null = null;

  async start(database: Database): Promise<void> {
    this.stop = await database.listen(EVENTS_CHANNEL, (payload) => {
      let event: RetascEvent;
      try {
        event = JSON.parse(payload) as RetascEvent;
      } catch {
        return;
      }
      for (const listener of this.listeners) listener(event);
    });
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    await this.stop?.();
    this.listeners.clear();
  }
}
