import type { Database } from "../db/client.ts";
import type { Services } from "../server/context.ts";
import type { Logger } from "../server/log.ts";
import type { JobCatalog } from "./catalog.ts";
import type { SweepDefinition } from "./sweeps.ts";

/** What both runners (BullMQ on Redis, in-process on the database) are built from. */
export interface RunnerOptions {
  services: Services;
  /** For LISTEN on the outbox channel. */
  database: Database;
  log: Logger;
  catalog: JobCatalog;
  sweeps: SweepDefinition[];
}

export interface JobRunner {
  kind: "bullmq" | "inline";
  /** Stops taking work, lets in-flight jobs finish (or hands them back), then returns. */
  stop(): Promise<void>;
}

/** How long shutdown waits for in-flight jobs before handing them back to the queue. */
export const SHUTDOWN_GRACE_MS = 10_000;

/** Waits for all of `work` to settle, at most `ms`; says whether it all did. */
export async function settleWithin(work: Array<Promise<unknown> | null>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([Promise.allSettled(work).then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Rejects after `ms`; the underlying operation may still finish later (callers must tolerate that). */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    }),
  ]);
}

/** The next multiple of `everyMs` after `now`: every runner on every process agrees on ticks. */
export function nextTick(now: number, everyMs: number): number {
  return Math.floor(now / everyMs) * everyMs + everyMs;
}
