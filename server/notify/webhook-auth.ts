import crypto from "node:crypto";
import type { Db } from "../../db/client.ts";
import { jobReceipts } from "../../db/schema/index.ts";

/** Constant-time equality of two secrets (a length difference is also answered in constant time). */
export function sameSecret(given: string | null, expected: string): boolean {
  if (given === null) return false;
  const a = crypto.createHash("sha256").update(given).digest();
  const b = crypto.createHash("sha256").update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}

/** What a webhook door answers: a status and a small JSON body (never a stack trace). */
export interface WebhookReply {
  status: number;
  body: unknown;
}

export const refused = (status: number, message: string): WebhookReply => ({ status, body: { error: { code: status === 401 ? "UNAUTHORIZED" : "INVALID_INPUT", message } } });

/** Chat platforms' webhook bodies are small (an update, an interaction, a slash command). */
export const NOTIFY_WEBHOOK_MAX_BYTES = 65_536;

/**
 * The door of the three chat webhooks: POST only, a declared length under the limit (refused
 * unread), the raw body handed over as it was signed, and the reply as JSON.
 */
export async function answerWebhook(request: Request, receive: (body: string) => Promise<WebhookReply>): Promise<Response> {
  const headers = { "cache-control": "no-store" };
  if (request.method !== "POST") return Response.json(refused(405, "only POST is accepted here").body, { status: 405, headers });
  if (!(Number(request.headers.get("content-length") ?? 0) <= NOTIFY_WEBHOOK_MAX_BYTES)) {
    return Response.json({ error: { code: "PAYLOAD_TOO_LARGE", message: `the body is larger than ${NOTIFY_WEBHOOK_MAX_BYTES} bytes` } }, { status: 413, headers });
  }
  const reply = await receive(await request.text());
  return Response.json(reply.body, { status: reply.status, headers });
}

/**
 * Records a signed request the first time it is seen (a receipt keyed by the digest of what
 * identifies it, pruned with the other receipts after the signature window is long past);
 * false when it was seen before: a replay.
 */
export async function firstSighting(db: Db, channel: string, identity: string): Promise<boolean> {
  const key = `webhook:${channel}:${crypto.createHash("sha256").update(identity).digest("hex")}`;
  const inserted = await db.insert(jobReceipts).values({ key, job: `webhook.${channel}` }).onConflictDoNothing().returning({ key: jobReceipts.key });
  return inserted.length > 0;
}
