import { and, eq, isNull } from "drizzle-orm";
import { connectors, intakeDeliveries, projects } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import { applyIntakeEvent, type ConnectorFacts } from "./apply.ts";
import { intakeEventOf, type IntakeEvent } from "./events.ts";
import { gitlabAuthorIsOutsider } from "./providers.ts";

/**
 * Processes one recorded delivery (the intake.delivery job): reads its encrypted payload, turns
 * it into an intake event and applies it, all in one transaction with the delivery marked
 * processed, so a repeat delivery of the job finds it processed and does nothing. A provider
 * call the event needs (GitLab's member check) happens before the transaction.
 */
export async function processDelivery(services: Services, deliveryRowId: string): Promise<{ outcome: string }> {
  const [row] = await services.db
    .select({
      id: intakeDeliveries.id,
      event: intakeDeliveries.event,
      payloadEnc: intakeDeliveries.payloadEnc,
      processedAt: intakeDeliveries.processedAt,
      connector: {
        id: connectors.id,
        orgId: connectors.orgId,
        provider: connectors.provider,
        repo: connectors.repo,
        baseUrl: connectors.baseUrl,
        tokenEnc: connectors.tokenEnc,
        intakeLabel: connectors.intakeLabel,
        triageAll: connectors.triageAll,
        revokedAt: connectors.revokedAt,
        projectPrefix: projects.prefix,
      },
    })
    .from(intakeDeliveries)
    .innerJoin(connectors, eq(connectors.id, intakeDeliveries.connectorId))
    .innerJoin(projects, eq(projects.id, connectors.projectId))
    .where(eq(intakeDeliveries.id, deliveryRowId));
  if (!row || row.processedAt) return { outcome: "already" };
  const { connector } = row;
  const cipher = await services.keyring.forOrg(services.db, connector.orgId);
  let event: IntakeEvent | null = null;
  try {
    event = connector.revokedAt ? null : intakeEventOf(connector.provider, row.event, JSON.parse(cipher.decrypt(row.payloadEnc)));
  } catch {
    event = null;
  }
  const outsider =
    event === null || connector.triageAll
      ? false
      : (event.issue.outsider ?? (await gitlabAuthorIsOutsider(services.config, { ...connector, token: cipher.decrypt(connector.tokenEnc) }, event.issue.authorId)));
  const facts: ConnectorFacts = connector;
  return services.db.transaction(async (tx) => {
    const [claimed] = await tx
      .update(intakeDeliveries)
      .set({ processedAt: services.clock.now() })
      .where(and(eq(intakeDeliveries.id, row.id), isNull(intakeDeliveries.processedAt)))
      .returning({ id: intakeDeliveries.id });
    if (!claimed) return { outcome: "already" };
    if (!event) return { outcome: "ignored" };
    return { outcome: await applyIntakeEvent(services, tx, facts, event, outsider) };
  });
}
