import crypto from "node:crypto";
import type { REST } from "@discordjs/rest";
import type { RESTPostAPIChannelMessageJSONBody, RESTPostAPIChannelMessageResult } from "discord-api-types/v10";
import type { Config } from "../../config/index.ts";
import { clientPerConfig, onFirstUse } from "../../on-first-use.ts";
import { SendFailure, shortReason } from "../../outbound/failure.ts";

const discordJs = onFirstUse(() => import("@discordjs/rest"));
/** Discord's API routes and constants (the interactions endpoint reads them too), loaded with the first use. */
export const discordApiTypes = onFirstUse(() => import("discord-api-types/v10"));

/** @discordjs/rest on DISCORD_API_URL, rejecting 429s instead of queueing them, so the delivery honours Retry-After itself. */
const discordRest = clientPerConfig(async (config: Config): Promise<REST> => {
  if (!config.DISCORD_BOT_TOKEN) throw new SendFailure("permanent", "Discord is not configured on this server (DISCORD_BOT_TOKEN)");
  const { REST } = await discordJs.load();
  return new REST({ api: config.DISCORD_API_URL.replace(/\/+$/, ""), version: "10", retries: 0, rejectOnRateLimit: () => true }).setToken(config.DISCORD_BOT_TOKEN);
});

/** Discord's nonce is at most 25 characters: a digest of the delivery key, enforced so a resend within minutes is not posted twice. */
const nonceOf = (key: string) => crypto.createHash("sha256").update(key).digest("base64url").slice(0, 25);

export async function sendDiscord(config: Config, channelId: string, content: string, key: string): Promise<string> {
  const body: RESTPostAPIChannelMessageJSONBody = { content, nonce: nonceOf(key), enforce_nonce: true, allowed_mentions: { parse: [] } };
  try {
    const rest = await discordRest(config);
    const { Routes } = await discordApiTypes.load();
    const sent = (await rest.post(Routes.channelMessages(channelId), { body })) as RESTPostAPIChannelMessageResult;
    return sent.id;
  } catch (error) {
    if (error instanceof SendFailure) throw error;
    const loaded = discordJs.loaded;
    if (loaded && error instanceof loaded.RateLimitError) throw new SendFailure("rate", "rate limited", Math.max(0, error.retryAfter));
    // 403 (50007: cannot send messages to this user), 404 unknown channel, 401 bad token.
    if (loaded && error instanceof loaded.DiscordAPIError && error.status >= 400 && error.status < 500) throw new SendFailure("permanent", shortReason(error.message));
    throw new SendFailure("retry", "Discord could not be reached");
  }
}

/** Opens (or finds) the bot's DM channel with a user: where their messages go. */
export async function openDiscordDm(config: Config, userId: string): Promise<string> {
  const rest = await discordRest(config);
  const { Routes } = await discordApiTypes.load();
  const channel = (await rest.post(Routes.userChannels(), { body: { recipient_id: userId } })) as { id: string };
  return channel.id;
}
