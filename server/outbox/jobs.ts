import { z } from "zod";
import { notifyChannels } from "../../db/schema/notify.ts";

/**
 * The one map from job name to payload schema. `enqueue` validates against it before the
 * outbox row is written, and the runners validate again before a handler sees the payload.
 * Payloads are ids and enums only (strict objects), never content: they sit in the outbox
 * table and in Redis, where nothing is encrypted.
 */
export const issueEventKinds = ["done", "canceled", "review", "assigned", "reclaimed", "verification_failed", "verification_stale", "issue_quarantined"] as const;

const id = z.string().min(1).max(200);

export const jobSchemas = {
  /** An issue event someone may be told about: fanned out to one notify.send per channel of the person it concerns. */
  "notify.issue_event": z
    .object({
      orgId: id,
      issueId: id,
      kind: z.enum(issueEventKinds),
      /** The human whose action caused it: never notified of their own action. */
      actorId: id.nullable().optional(),
      /** The activity-log entry that records the event, when there is one. */
      activityId: z.number().int().positive().optional(),
    })
    .strict(),
  /** One message to one person on one channel (server/notify): its content is read and decrypted when it is sent. */
  "notify.send": z
    .object({
      orgId: id,
      /** Null for the Dash's "Send test". */
      issueId: id.nullable(),
      kind: z.enum([...issueEventKinds, "test"]),
      userId: id,
      channel: z.enum(notifyChannels),
    })
    .strict(),
  /** A verified intake delivery (server/intake) to apply: its payload is read, encrypted, from intake_deliveries. */
  "intake.delivery": z.object({ orgId: id, deliveryId: id }).strict(),
  /** A synced issue became done or canceled: close its source (enqueued by the issues_status_changed trigger, decision 121). */
  "intake.write_back": z.object({ orgId: id, issueId: id }).strict(),
  /** A Linear import whose pages are all staged (encrypted, linear_import_pages): apply them. Never the key. */
  "linear.apply": z.object({ orgId: id, runId: id }).strict(),
  /** A deleted org (its data key already destroyed): remove its rows in batches (server/orgs/purge.ts). */
  "org.purge": z.object({ orgId: id }).strict(),
};

export type JobSchemas = Record<string, z.ZodType>;
export type JobName = keyof typeof jobSchemas;
export type JobPayload<J extends JobName> = z.output<(typeof jobSchemas)[J]>;
