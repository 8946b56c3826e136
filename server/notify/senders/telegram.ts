import type { Api } from "grammy";
import type { Config } from "../../config/index.ts";
import { clientPerConfig, onFirstUse } from "../../on-first-use.ts";
import { retryAfterMs, SendFailure, shortReason } from "../../outbound/failure.ts";

const grammy = onFirstUse(() => import("grammy"));
/** grammY's Api on TELEGRAM_API_URL (one per configuration). */
export const telegramApi = clientPerConfig(async (config: Config): Promise<Api> => {
  if (!config.TELEGRAM_BOT_TOKEN) throw new SendFailure("permanent", "Telegram is not configured on this server (TELEGRAM_BOT_TOKEN)");
  const { Api } = await grammy.load();
  return new Api(config.TELEGRAM_BOT_TOKEN, { apiRoot: config.TELEGRAM_API_URL.replace(/\/+$/, "") });
});

/** Sends an HTML message to a chat; the message id, or a SendFailure. */
export async function sendTelegram(config: Config, chatId: string, html: string): Promise<string> {
  try {
    const sent = await (await telegramApi(config)).sendMessage(chatId, html, { parse_mode: "HTML", link_preview_options: { is_disabled: true } });
    return String(sent.message_id);
  } catch (error) {
    const GrammyError = grammy.loaded?.GrammyError;
    if (GrammyError && error instanceof GrammyError) {
      if (error.error_code === 429) throw new SendFailure("rate", error.description, retryAfterMs(error.parameters.retry_after));
      // 400 chat not found, 401 token revoked, 403 bot blocked or kicked: retrying cannot help.
      if (error.error_code >= 400 && error.error_code < 500) throw new SendFailure("permanent", shortReason(error.description));
      throw new SendFailure("retry", shortReason(error.description));
    }
    throw new SendFailure("retry", "Telegram could not be reached");
  }
}
