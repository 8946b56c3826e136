import type { Route } from "./+types/webhooks.github.$connectorId";
import { intakeWebhookResponse } from "../../server/intake/http.ts";

/** GitHub's signed issue webhooks for one connector (X-Hub-Signature-256 (HMAC-SHA256 of the raw body); server/intake/receive.ts). */
export async function action({ request, params, context }: Route.ActionArgs) {
  return intakeWebhookResponse(context.services, context.log, "github", params.connectorId, request);
}
