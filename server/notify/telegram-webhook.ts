import { z } from "zod";
import type { Services } from "../context.ts";
import type { Logger } from "../log.ts";
import { bindChannel, consumeCode } from "./bindings.ts";
import { telegramApi } from "./senders/telegram.ts";
import { firstSighting, refused, sameSecret, type WebhookReply } from "./webhook-auth.ts";

/** The part of a Telegram update we act on: a private message, maybe `/start <code>`. */
const updateSchema = z.object({
  update_id: z.number().int(),
  message: z
    .object({
      text: z.string().max(4096).optional(),
      chat: z.object({ id: z.number().int(), type: z.string() }),
      from: z.object({ username: z.string().max(64).optional() }).optional(),
    })
    .optional(),
});

/**
 * POST /webhooks/telegram. Telegram sends setWebhook's secret_token back in
 * X-Telegram-Bot-Api-Secret-Token; anything else is refused (401). `/start <code>` in a
 * private chat binds that chat to the code's person; the bot answers in the chat either way.
 */
export async function receiveTelegramUpdate(services: Services, log: Logger, body: string, secretHeader: string | null): Promise<WebhookReply> {
  const secret = services.config.TELEGRAM_WEBHOOK_SECRET;
  if (!secret || !services.config.TELEGRAM_BOT_TOKEN) return refused(404, "Telegram is not set up on this server");
  if (!sameSecret(secretHeader, secret)) return refused(401, "the secret token does not match");
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return refused(400, "the body is not JSON");
  }
  const parsed = updateSchema.safeParse(json);
  if (!parsed.success) return refused(400, "not a Telegram update");
  // Telegram redelivers an update until it gets a 2xx: a second delivery is acknowledged, not acted on.
  if (!(await firstSighting(services.db, "telegram", String(parsed.data.update_id)))) return { status: 200, body: { ok: true, duplicate: true } };
  const message = parsed.data.message;
  const start = message?.text?.match(/^\/start(?:@\w+)?\s+(\S+)\s*$/);
  if (!message || !start || message.chat.type !== "private") return { status: 200, body: { ok: true } };

  const chatId = String(message.chat.id);
  const owner = await consumeCode(services.db, "telegram", start[1]!, services.clock.now());
  if (owner) await bindChannel(services, services.db, owner, "telegram", { chatId, ...(message.from?.username ? { name: message.from.username } : {}) });
  const answer = owner
    ? "Connected: Retasc will tell you here when work you are tied to moves. Mute kinds on the Dash Notifications page."
    : "That link has expired or was already used. Open the Dash Notifications page for a new one.";
  await telegramApi(services.config)
    .then((api) => api.sendMessage(chatId, answer))
    .catch((error: unknown) => log.warn({ err: error }, "telegram: the connect answer could not be sent"));
  return { status: 200, body: { ok: true, connected: Boolean(owner) } };
}
