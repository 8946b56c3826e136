import { verify } from "@octokit/webhooks-methods";
import { and, eq, sql } from "drizzle-orm";
import { connectors, intakeDeliveries, orgs, type ConnectorProvider } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import { constantTimeEqual } from "../crypto/index.ts";
import { inputErrorOf } from "../errors.ts";
import type { Logger } from "../log.ts";
import { metrics } from "../metrics/index.ts";
import { newId } from "../orgs/index.ts";
import { orgFrozen, orgFrozenColumn } from "../orgs/freeze.ts";
import { transactionWithNotices } from "../events/index.ts";
import { enqueue } from "../outbox/index.ts";
import { ciEventOf, ciEvents } from "./ci-events.ts";
import { intakeEventOf, pullRequestEvents, usedEvents, type IntakeEvent } from "./events.ts";

/** The largest delivery read: issue and comment events are tens of kilobytes (GitHub caps any at 25 MB). */
export const INTAKE_WEBHOOK_MAX_BYTES = 1024 * 1024;

export interface IntakeReply {
  status: number;
  body:
    | { received: true; event: string; outcome: "recorded" | "duplicate" | "ignored" }
    | { error: { code: string; message: string; hint: string; details?: Record<string, unknown> } };
}

/** What a delivery carries besides its body, read from the provider's headers. */
export interface DeliveryHeaders {
  /** X-GitHub-Event / X-Gitlab-Event. */
  event: string | null;
  /** X-GitHub-Delivery / X-Gitlab-Event-UUID. */
  deliveryId: string | null;
  /** X-Hub-Signature-256 / X-Gitlab-Token. */
  signature: string | null;
}

export function deliveryHeadersOf(provider: ConnectorProvider, headers: Headers): DeliveryHeaders {
  return provider === "github"
    ? { event: headers.get("x-github-event"), deliveryId: headers.get("x-github-delivery"), signature: headers.get("x-hub-signature-256") }
    : { event: headers.get("x-gitlab-event"), deliveryId: headers.get("x-gitlab-event-uuid"), signature: headers.get("x-gitlab-token") };
}

/**
 * What a delivery carries, as intake reads it (the event, its action, the object's id and
 * updated_at, the fields intake uses), for deduplication: a copy of a signed delivery sent
 * again under a new delivery id carries the same and is a duplicate. Null when intake does
 * nothing with the delivery or the object has no updated_at (the delivery id alone then).
 */
export function deliveryContent(provider: ConnectorProvider, event: string, body: unknown): string | null {
  if (ciEvents[provider].has(event)) {
    try {
      const run = ciEventOf(provider, event, body);
      return run ? JSON.stringify([provider, event, run.id]) : null;
    } catch {
      return null;
    }
  }
  let carried: IntakeEvent | null;
  try {
    carried = intakeEventOf(provider, event, body);
  } catch {
    return null;
  }
  if (!carried) return null;
  const updatedAt = carried.kind === "comment" || carried.kind === "request_comment" ? (carried.comment.updatedAt ?? (carried.kind === "comment" ? carried.issue.updatedAt : null)) : carried.issue.updatedAt;
  return updatedAt ? JSON.stringify([provider, event, carried]) : null;
}

const refusal = (status: number, code: string, message: string, hint: string): IntakeReply => ({ status, body: { error: { code, message, hint } } });

/**
 * POST /webhooks/github/:connectorId and /webhooks/gitlab/:connectorId. Unknown connector 404,
 * revoked 410, a missing or wrong signature 401 (nothing stored); then the delivery is recorded
 * once per delivery id and once per content (deliveryContent), encrypted, with its processing job in the same transaction (the outbox),
 * and answered 202. An event intake does not use (pull/merge requests unless the connector's
 * stream is on) is 202 and not stored. Any verified delivery
 * (GitHub's ping, GitLab's Test) turns a Pending connector Connected.
 */
export async function receiveIntakeWebhook(
  services: Services,
  log: Logger,
  provider: ConnectorProvider,
  connectorId: string,
  headers: DeliveryHeaders,
  body: Buffer,
): Promise<IntakeReply> {
  let reply: IntakeReply;
  try {
    reply = await receive(services, log, provider, connectorId, headers, body);
  } catch (error) {
    const input = inputErrorOf(error);
    if (input) reply = refusal(400, input.code, input.message, input.hint);
    else {
      log.error({ err: error, provider }, "intake webhook failed");
      reply = refusal(503, "UNAVAILABLE", "the delivery could not be recorded now", "The provider delivers it again later.");
    }
  }
  metrics.webhookDelivery(provider, reply.status >= 500 ? "failed" : reply.status >= 400 ? "refused" : "outcome" in reply.body && reply.body.outcome === "duplicate" ? "duplicate" : "accepted");
  return reply;
}

async function receive(services: Services, log: Logger, provider: ConnectorProvider, connectorId: string, headers: DeliveryHeaders, body: Buffer): Promise<IntakeReply> {
  const unknown = refusal(404, "NOT_FOUND", "no such connector", "Copy the webhook URL from the Dash's Connectors page or `retasc connector list`.");
  if (!/^[0-9a-f-]{36}$/.test(connectorId)) return unknown;
  const [connector] = await services.db
    .select({
      id: connectors.id,
      orgId: connectors.orgId,
      provider: connectors.provider,
      secretEnc: connectors.webhookSecretEnc,
      revokedAt: connectors.revokedAt,
      pullRequests: connectors.pullRequests,
      orgFrozen: orgFrozenColumn,
    })
    .from(connectors)
    .innerJoin(orgs, eq(orgs.id, connectors.orgId))
    .where(and(eq(connectors.id, connectorId), eq(connectors.provider, provider)));
  if (!connector) return unknown;
  if (connector.revokedAt) return refusal(410, "REVOKED", "this connector was revoked", "Remove the webhook on the provider's side, or connect the repository again.");
  const cipher = await services.keyring.forOrg(services.db, connector.orgId);
  const secret = cipher.decrypt(connector.secretEnc);
  if (!(await signatureHolds(provider, secret, body, headers.signature))) {
    log.warn({ provider, connectorId }, "intake webhook refused: bad signature");
    return refusal(401, "UNAUTHORIZED", provider === "github" ? "X-Hub-Signature-256 is missing or does not verify" : "X-Gitlab-Token is missing or wrong", "Set the webhook's secret to the one shown when the connector was created.");
  }
  // A frozen org records nothing (decision 110): 503, which GitHub and GitLab deliver again later.
  if (connector.orgFrozen) {
    const frozen = orgFrozen();
    return { status: 503, body: { error: { code: frozen.code, message: frozen.message, hint: frozen.hint, details: frozen.details } } };
  }
  const event = headers.event ?? "";
  const now = services.clock.now();
  const used = usedEvents[provider].has(event) || ciEvents[provider].has(event) || (connector.pullRequests && pullRequestEvents[provider].has(event));
  if (used && !headers.deliveryId) return refusal(400, "INVALID_INPUT", "the delivery id header is missing", "Deliveries carry X-GitHub-Delivery or X-Gitlab-Event-UUID.");
  let content: string | null = null;
  if (used) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      return refusal(400, "INVALID_INPUT", "the signed body is not JSON", "Send the delivery as the provider signed it.");
    }
    content = deliveryContent(provider, event, parsed);
  }
  const outcome = await transactionWithNotices(services.db, async (tx) => {
    await tx
      .update(connectors)
      .set({ connectedAt: sql`coalesce(${connectors.connectedAt}, ${now.toISOString()}::timestamptz)`, lastDeliveryAt: now })
      .where(eq(connectors.id, connector.id));
    if (!used) return "ignored" as const;
    const [row] = await tx
      .insert(intakeDeliveries)
      .values({
        id: newId(),
        orgId: connector.orgId,
        connectorId: connector.id,
        deliveryId: headers.deliveryId!.slice(0, 200),
        contentKey: content === null ? null : cipher.fingerprint(content),
        event,
        payloadEnc: cipher.encrypt(body.toString("utf8")),
        receivedAt: now,
      })
      // Either key already taken (the same delivery id, or the same content under another id): a duplicate.
      .onConflictDoNothing()
      .returning({ id: intakeDeliveries.id });
    if (!row) return "duplicate" as const;
    await enqueue(tx, "intake.delivery", { orgId: connector.orgId, deliveryId: row.id });
    return "recorded" as const;
  });
  log.info({ provider, connectorId, event, outcome }, "intake webhook");
  return { status: 202, body: { received: true, event, outcome } };
}

async function signatureHolds(provider: ConnectorProvider, secret: string, body: Buffer, signature: string | null): Promise<boolean> {
  if (!signature || body.length === 0) return false;
  if (provider === "gitlab") return constantTimeEqual(signature, secret);
  try {
    return await verify(secret, body.toString("utf8"), signature);
  } catch {
    return false;
  }
}
