import type { Services } from "../server/context.ts";

/** What the Node entry (main.ts) hands every loader and action. */
export interface RetascLoadContext {
  services: Services;
  health(): Promise<{ ok: boolean; detail: Record<string, unknown> }>;
}

declare module "react-router" {
  interface AppLoadContext extends RetascLoadContext {}
}
