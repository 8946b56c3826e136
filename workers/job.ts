import { z } from "zod";
import type { Services } from "../server/context.ts";
import { DomainError, type ErrorCode } from "../server/errors.ts";
import type { Logger } from "../server/log.ts";

/**
 * What a job handler is given and how its failure is judged: the leaf every handler and the
 * catalog that lists the handlers (./catalog.ts) both import, so no handler imports its catalog.
 */

/** What a handler gets besides its payload. `key` is its idempotency key (`outbox:<id>`). */
export interface JobContext {
  services: Services;
  log: Logger;
  key: string;
  outboxId: number;
  /** 1 on the first delivery, counting retries and takeovers from crashed workers. */
  attempt: number;
}

export type JobHandler<S extends z.ZodType> = (ctx: JobContext, payload: z.output<S>) => Promise<unknown>;

/**
 * A failure no retry can mend (an unknown job, a payload that does not parse, a token the
 * provider refused): the runner gives the job up at once. BullMQ's runner passes it on as
 * BullMQ's own UnrecoverableError; it is ours so that a process without Redis never loads BullMQ.
 */
export class PermanentJobError extends Error {
  override name = "PermanentJobError";
}

/** Domain refusals that a retry cannot change; anything else (a database blip, a timeout) is retried. */
const retryableCodes: readonly ErrorCode[] = ["UNAVAILABLE", "RATE_LIMITED", "CONFLICT"];

export function isPermanent(error: unknown): boolean {
  if (error instanceof PermanentJobError || error instanceof z.ZodError) return true;
  if (error instanceof DomainError) return !retryableCodes.includes(error.code);
  return false;
}
