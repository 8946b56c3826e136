import type { Route } from "./+types/webhooks.slack";
import { receiveSlackCommand } from "../../server/notify/slack.ts";
import { answerWebhook } from "../../server/notify/webhook-auth.ts";

/** The Slack app's `/retasc` slash command (server/notify/slack.ts), signed with the signing secret. */
export async function action({ request, context }: Route.ActionArgs) {
  return answerWebhook(request, (body) => receiveSlackCommand(context.services, context.log, body, request.headers));
}
