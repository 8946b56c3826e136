import { and, eq, sql } from "drizzle-orm";
import { notifyBindings, notifyDeliveries, notifyMutes } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import type { Logger } from "../log.ts";
import type { JobPayload } from "../outbox/jobs.ts";
import { sendOn, type Address } from "./channels.ts";
import { composeMessage } from "./message.ts";
import { SendFailure } from "../outbound/failure.ts";

type Send = JobPayload<"notify.send">;
export type DeliveryOutcome = "sent" | "muted" | "skipped" | "failed" | "unconfirmed" | "already";

/** A 429 asking for longer than this goes back to the job's backoff instead of holding the worker. */
const MAX_INLINE_WAIT_MS = 30_000;
const MAX_RATE_WAITS = 5;

/**
 * Sends one message once. The delivery row (keyed by the job's idempotency key) is the receipt:
 * a finished one makes a repeat delivery a no-op. Mutes and the binding are read now, so a mute
 * set after the event was queued still suppresses it. `sending` is committed just before the
 * platform is called: a run that finds it left by a dead attempt cannot tell whether the message
 * went out and records `unconfirmed` instead of sending it twice (docs/decisions/021).
 */
export async function deliver(services: Services, log: Logger, key: string, job: Send): Promise<DeliveryOutcome> {
  const { db } = services;
  const where = eq(notifyDeliveries.key, key);
  const settle = (state: DeliveryOutcome, extra: { providerId?: string; error?: string } = {}) =>
    db
      .update(notifyDeliveries)
      .set({ state: state === "already" ? "sent" : state, providerId: extra.providerId ?? null, error: extra.error ?? null, sentAt: state === "sent" ? sql`now()` : null })
      .where(where);

  await db
    .insert(notifyDeliveries)
    .values({ key, orgId: job.orgId, userId: job.userId, issueId: job.issueId ?? "", kind: job.kind, channel: job.channel, state: "retrying" })
    .onConflictDoNothing();
  const [row] = await db.select().from(notifyDeliveries).where(where);
  if (!row || (row.state !== "retrying" && row.state !== "sending")) return "already";
  if (row.state === "sending") {
    await settle("unconfirmed", { error: "interrupted while sending; not sent again" });
    return "unconfirmed";
  }

  if (job.kind !== "test") {
    const [muted] = await db
      .select({ kind: notifyMutes.kind })
      .from(notifyMutes)
      .where(and(eq(notifyMutes.orgId, job.orgId), eq(notifyMutes.userId, job.userId), eq(notifyMutes.kind, job.kind)));
    if (muted) {
      await settle("muted");
      return "muted";
    }
  }
  const [binding] = await db
    .select()
    .from(notifyBindings)
    .where(and(eq(notifyBindings.orgId, job.orgId), eq(notifyBindings.userId, job.userId), eq(notifyBindings.channel, job.channel)));
  const message = binding?.status === "active" ? await composeMessage(services, db, job.orgId, job.issueId, job.kind) : null;
  if (!binding || !message) {
    await settle("skipped", { error: binding ? "the issue is gone" : "not connected" });
    return "skipped";
  }
  const address = JSON.parse((await services.keyring.forOrg(db, job.orgId)).decrypt(binding.addressEnc)) as Address;

  for (let waits = 0; ; waits++) {
    await db.update(notifyDeliveries).set({ state: "sending", attempts: sql`${notifyDeliveries.attempts} + 1` }).where(where);
    try {
      const providerId = await sendOn(services, job.orgId, job.channel, address, message, key);
      await settle("sent", { providerId });
      return "sent";
    } catch (error) {
      const failure = error instanceof SendFailure ? error : new SendFailure("retry", "send failed");
      if (failure.kind === "permanent") {
        await db.transaction(async (tx) => {
          await tx.update(notifyDeliveries).set({ state: "failed", error: failure.reason }).where(where);
          await tx
            .update(notifyBindings)
            .set({ status: "broken", brokenReason: failure.reason, updatedAt: sql`now()` })
            .where(eq(notifyBindings.id, binding.id));
        });
        log.warn({ channel: job.channel, outboxKey: key, reason: failure.reason }, "notification refused for good; binding marked broken");
        return "failed";
      }
      // Nothing went out (the platform answered no, or was not reached): a later attempt may send.
      await db.update(notifyDeliveries).set({ state: "retrying", error: failure.reason }).where(where);
      if (failure.kind === "rate" && failure.retryAfterMs <= MAX_INLINE_WAIT_MS && waits < MAX_RATE_WAITS) {
        log.info({ channel: job.channel, outboxKey: key, retryAfterMs: failure.retryAfterMs }, "rate limited; waiting as asked");
        await new Promise((resolve) => setTimeout(resolve, failure.retryAfterMs));
        continue;
      }
      throw failure;
    }
  }
}
