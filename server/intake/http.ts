import type { ConnectorProvider } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import type { Logger } from "../log.ts";
import { deliveryHeadersOf, INTAKE_WEBHOOK_MAX_BYTES, receiveIntakeWebhook } from "./receive.ts";

const json = (status: number, body: unknown) => Response.json(body, { status, headers: { "cache-control": "no-store" } });
const tooLarge = () =>
  json(413, { error: { code: "PAYLOAD_TOO_LARGE", message: `the body is larger than ${INTAKE_WEBHOOK_MAX_BYTES} bytes`, hint: "Issue and comment events are smaller." } });

/**
 * The two intake webhook routes' whole work: POST only, a declared length over
 * INTAKE_WEBHOOK_MAX_BYTES refused unread (413; the edge makes every body declare its
 * length), then the raw body as it was signed to receiveIntakeWebhook.
 */
export async function intakeWebhookResponse(services: Services, log: Logger, provider: ConnectorProvider, connectorId: string, request: Request): Promise<Response> {
  if (request.method !== "POST") return json(405, { error: { code: "INVALID_INPUT", message: "only POST is accepted here", hint: "Providers deliver webhooks with POST." } });
  if (!(Number(request.headers.get("content-length") ?? 0) <= INTAKE_WEBHOOK_MAX_BYTES)) return tooLarge();
  const body = Buffer.from(await request.arrayBuffer());
  if (body.length > INTAKE_WEBHOOK_MAX_BYTES) return tooLarge();
  const reply = await receiveIntakeWebhook(services, log, provider, connectorId, deliveryHeadersOf(provider, request.headers), body);
  const retryAfter = "error" in reply.body ? reply.body.error.details?.retryAfter : undefined;
  if (typeof retryAfter === "number") return Response.json(reply.body, { status: reply.status, headers: { "cache-control": "no-store", "retry-after": String(retryAfter) } });
  return json(reply.status, reply.body);
}
