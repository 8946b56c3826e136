import type { Route } from "./+types/webhooks.discord";
import { receiveDiscordInteraction } from "../../server/notify/discord.ts";
import { answerWebhook } from "../../server/notify/webhook-auth.ts";

/** The Discord application's interactions endpoint (server/notify/discord.ts), Ed25519-signed. */
export async function action({ request, context }: Route.ActionArgs) {
  return answerWebhook(request, (body) => receiveDiscordInteraction(context.services, context.log, body, request.headers));
}
