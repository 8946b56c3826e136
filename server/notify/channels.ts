import type { NotifyChannel } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import type { Message } from "./message.ts";
import { discordText, emailParts, slackText, telegramHtml } from "./render.ts";
import { sendDiscord } from "./senders/discord.ts";
import { sendEmail } from "../outbound/email.ts";
import { SendFailure } from "../outbound/failure.ts";
import { sendSlack, slackBotToken } from "./senders/slack.ts";
import { sendTelegram } from "./senders/telegram.ts";

/** What a binding's (encrypted) address holds, per channel. */
export interface Addresses {
  telegram: { chatId: string; name?: string };
  email: { email: string };
  slack: { teamId: string; userId: string };
  discord: { userId: string; channelId: string };
}
export type Address = Addresses[NotifyChannel];

/** A short label for the Dash: which account is bound (decrypted for its owner only). */
export function addressLabel(channel: NotifyChannel, address: Address): string {
  switch (channel) {
    case "telegram": {
      const a = address as Addresses["telegram"];
      return a.name ? `@${a.name}` : `chat ${a.chatId}`;
    }
    case "email":
      return (address as Addresses["email"]).email;
    case "slack":
      return `Slack user ${(address as Addresses["slack"]).userId}`;
    case "discord":
      return `Discord user ${(address as Addresses["discord"]).userId}`;
  }
}

/** Sends one message on one channel; the platform's message id, or a SendFailure. `key` is the delivery's idempotency key. */
export async function sendOn(
  services: Services,
  orgId: string,
  channel: NotifyChannel,
  address: Address,
  message: Message,
  key: string,
): Promise<string> {
  const { config } = services;
  switch (channel) {
    case "telegram":
      return sendTelegram(config, (address as Addresses["telegram"]).chatId, telegramHtml(message));
    case "email":
      return sendEmail(config, (address as Addresses["email"]).email, { ...emailParts(message), messageId: `<${key.replace(/[^A-Za-z0-9.-]/g, ".")}@retasc>` });
    case "slack": {
      const token = await slackBotToken(services, orgId);
      if (!token) throw new SendFailure("permanent", "the Slack app is no longer installed for this org");
      return sendSlack(config, token, (address as Addresses["slack"]).userId, slackText(message));
    }
    case "discord":
      return sendDiscord(config, (address as Addresses["discord"]).channelId, discordText(message), key);
  }
}
