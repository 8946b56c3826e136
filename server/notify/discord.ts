import crypto from "node:crypto";
import { z } from "zod";
import type { Services } from "../context.ts";
import type { Logger } from "../log.ts";
import { bindChannel, consumeCode } from "./bindings.ts";
import { discordApiTypes, openDiscordDm } from "./senders/discord.ts";
import { firstSighting, refused, type WebhookReply } from "./webhook-auth.ts";

/** A signed interaction older (or further ahead) than this is refused as a replay. */
const DISCORD_MAX_SKEW_S = 5 * 60;
/** Ed25519 public keys in SPKI DER are this prefix and the 32 raw bytes. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

const publicKeys = new Map<string, crypto.KeyObject>();
function publicKeyOf(hex: string): crypto.KeyObject {
  let key = publicKeys.get(hex);
  if (!key) {
    key = crypto.createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(hex, "hex")]), format: "der", type: "spki" });
    publicKeys.set(hex, key);
  }
  return key;
}

/** Discord's interaction signature: Ed25519 over timestamp + body with the application's public key. */
export function discordSignatureValid(publicKeyHex: string, body: string, timestamp: string | null, signature: string | null, nowS: number): boolean {
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp) || !/^[0-9a-f]{128}$/i.test(signature)) return false;
  if (Math.abs(nowS - Number(timestamp)) > DISCORD_MAX_SKEW_S) return false;
  return crypto.verify(null, Buffer.from(timestamp + body), publicKeyOf(publicKeyHex), Buffer.from(signature, "hex"));
}

const interactionSchema = z.object({
  type: z.number().int(),
  data: z.object({ name: z.string(), options: z.array(z.object({ name: z.string(), value: z.unknown() })).optional() }).optional(),
  user: z.object({ id: z.string().regex(/^\d{1,25}$/) }).optional(),
  member: z.object({ user: z.object({ id: z.string().regex(/^\d{1,25}$/) }) }).optional(),
});

/**
 * POST /webhooks/discord, the interactions endpoint: verified and not seen before, or refused (401). PING is
 * answered with PONG; `/connect <code>` binds the person's DM channel with the bot (opened
 * through the REST API) and answers ephemerally.
 */
export async function receiveDiscordInteraction(services: Services, log: Logger, body: string, headers: Headers): Promise<WebhookReply> {
  const key = services.config.DISCORD_PUBLIC_KEY;
  if (!key || !services.config.DISCORD_BOT_TOKEN) return refused(404, "Discord is not set up on this server");
  const nowS = Math.floor(services.clock.now().getTime() / 1000);
  if (!discordSignatureValid(key, body, headers.get("x-signature-timestamp"), headers.get("x-signature-ed25519"), nowS)) {
    return refused(401, "invalid request signature");
  }
  if (!(await firstSighting(services.db, "discord", headers.get("x-signature-ed25519")!))) return refused(401, "this interaction was already received (a replay)");
  let parsed;
  try {
    parsed = interactionSchema.safeParse(JSON.parse(body));
  } catch {
    return refused(400, "the body is not JSON");
  }
  if (!parsed.success) return refused(400, "not a Discord interaction");
  const interaction = parsed.data;
  const { InteractionResponseType, InteractionType, MessageFlags } = await discordApiTypes.load();
  if (interaction.type === InteractionType.Ping) return { status: 200, body: { type: InteractionResponseType.Pong } };
  const say = (content: string): WebhookReply => ({ status: 200, body: { type: InteractionResponseType.ChannelMessageWithSource, data: { content, flags: MessageFlags.Ephemeral } } });
  const code = interaction.data?.options?.find((o) => o.name === "code")?.value;
  const userId = interaction.user?.id ?? interaction.member?.user.id;
  if (interaction.type !== InteractionType.ApplicationCommand || interaction.data?.name !== "connect" || typeof code !== "string" || !userId) {
    return say("Use /connect with the code from the Retasc Notifications page.");
  }
  const owner = await consumeCode(services.db, "discord", code.trim(), services.clock.now());
  if (!owner) return say("That code has expired or was already used. Get a new one on the Retasc Notifications page.");
  let channelId: string;
  try {
    channelId = await openDiscordDm(services.config, userId);
  } catch (error) {
    log.warn({ err: error }, "discord: the DM channel could not be opened");
    return say("Discord would not open a DM with you; allow DMs from this server's members and try a new code.");
  }
  await bindChannel(services, services.db, owner, "discord", { userId, channelId });
  return say("Connected: Retasc will DM you when work you are tied to moves.");
}
