import { z } from "zod";
import { DomainError } from "../server/errors.ts";
import { jobSchemas, type JobSchemas } from "../server/outbox/jobs.ts";
import { intakeDelivery } from "./handlers/intake-delivery.ts";
import { linearApply } from "./handlers/linear-apply.ts";
import { notifyIssueEvent } from "./handlers/notify-issue-event.ts";
import { notifySend } from "./handlers/notify-send.ts";
import { orgPurge } from "./handlers/org-purge.ts";
import { writeBackClose } from "./handlers/writeback-close.ts";
import { PermanentJobError, type JobContext, type JobHandler } from "./job.ts";

/** Job schemas with one handler each: what a runner can execute. */
export interface JobCatalog {
  schemas: JobSchemas;
  handlers: Record<string, JobHandler<z.ZodType>>;
}

export function jobCatalog<S extends JobSchemas>(
  schemas: S,
  handlers: { [J in keyof S]: JobHandler<S[J]> },
): JobCatalog {
  return { schemas, handlers: handlers as Record<string, JobHandler<z.ZodType>> };
}

export function mergeCatalogs(...catalogs: JobCatalog[]): JobCatalog {
  return {
    schemas: Object.assign({}, ...catalogs.map((c) => c.schemas)),
    handlers: Object.assign({}, ...catalogs.map((c) => c.handlers)),
  };
}

/** Every job the app enqueues, with its handler. */
export const retascJobs = jobCatalog(jobSchemas, {
  "notify.issue_event": notifyIssueEvent,
  "notify.send": notifySend,
  "intake.delivery": intakeDelivery,
  "intake.write_back": writeBackClose,
  "linear.apply": linearApply,
  "org.purge": orgPurge,
});

/** Validates the payload against the shared schema and runs the handler. */
export async function executeJob(catalog: JobCatalog, ctx: JobContext, name: string, payload: unknown): Promise<unknown> {
  const schema = catalog.schemas[name];
  const handler = catalog.handlers[name];
  if (!schema || !handler) throw new PermanentJobError(`unknown job ${name}`);
  const parsed = schema.safeParse(payload);
  if (!parsed.success) throw new PermanentJobError(`invalid payload for job ${name}`);
  return handler(ctx, parsed.data);
}

/** A short label for a failure, stored in the database: the error class or code, never its message. */
export function errorLabel(error: unknown): string {
  if (error instanceof DomainError) return error.code;
  const e = error as { name?: string; code?: unknown };
  const name = typeof e?.name === "string" ? e.name : "Error";
  return typeof e?.code === "string" ? `${name}:${e.code}`.slice(0, 100) : name.slice(0, 100);
}

/** Exponential backoff: base, 2×base, 4×base… capped at an hour. */
export function backoffMs(base: number, attempt: number): number {
  return Math.min(base * 2 ** Math.max(0, attempt - 1), 3_600_000);
}
