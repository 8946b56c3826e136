import type { FakeDiscord } from "../../test/fakes/discord.ts";
import type { FakeSlack } from "../../test/fakes/slack.ts";
import type { FakeSmtp } from "../../test/fakes/smtp.ts";
import type { FakeTelegram } from "../../test/fakes/telegram.ts";

/** The environment that points every notification channel at its local fake (server/notify's settings). */
export function notifyEnv(
  fakes: { telegram: FakeTelegram; slack: FakeSlack; discord: FakeDiscord; smtp: FakeSmtp },
  options: { telegramSecret: string; botUsername: string; from?: string },
): Record<string, string> {
  const { telegram, slack, discord, smtp } = fakes;
  return {
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_BOT_USERNAME: options.botUsername,
    TELEGRAM_WEBHOOK_SECRET: options.telegramSecret,
    TELEGRAM_API_URL: telegram.url,
    SLACK_CLIENT_ID: slack.clientId,
    SLACK_CLIENT_SECRET: slack.clientSecret,
    SLACK_SIGNING_SECRET: slack.signingSecret,
    SLACK_API_URL: slack.apiUrl,
    DISCORD_BOT_TOKEN: discord.botToken,
    DISCORD_PUBLIC_KEY: discord.publicKey,
    DISCORD_API_URL: discord.apiUrl,
    SMTP_URL: smtp.url,
    SMTP_FROM: options.from ?? "Retasc <retasc@example.com>",
  };
}
