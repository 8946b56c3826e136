import type { Route } from "./+types/webhooks.gitlab.$connectorId";
import { intakeWebhookResponse } from "../../server/intake/http.ts";

/** GitLab's signed issue webhooks for one connector (X-Gitlab-Token; server/intake/receive.ts). */
export async function action({ request, params, context }: Route.ActionArgs) {
  return intakeWebhookResponse(context.services, context.log, "gitlab", params.connectorId, request);
}
