import type { Services } from "../server/context.ts";
import type { EventHub } from "../server/events/index.ts";
import type { Logger } from "../server/log.ts";

/** What the Node entry (main.ts) hands every loader and action. */
export interface RetascLoadContext {
  services: Services;
  /** Change events from every app instance (PostgreSQL LISTEN), for live views. */
  hub: EventHub;
  log: Logger;
  health(): Promise<{ ok: boolean; detail: Record<string, unknown> }>;
}

declare module "react-router" {
  interface AppLoadContext extends RetascLoadContext {}
}
