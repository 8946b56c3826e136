import type { Route } from "./+types/webhooks.telegram";
import { receiveTelegramUpdate } from "../../server/notify/telegram-webhook.ts";
import { answerWebhook } from "../../server/notify/webhook-auth.ts";

/** The Telegram bot's webhook (server/notify/telegram-webhook.ts): `/start <code>` binds a chat. */
export async function action({ request, context }: Route.ActionArgs) {
  return answerWebhook(request, (body) =>
    receiveTelegramUpdate(context.services, context.log, body, request.headers.get("x-telegram-bot-api-secret-token")),
  );
}
