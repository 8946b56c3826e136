import { and, eq, isNull } from "drizzle-orm";
import { connectors, intakeDeliveries, members, projects, user } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import { applyIntakeEvent } from "./apply.ts";
import type { ConnectorFacts } from "./facts.ts";
import { ciEventOf, type CiEvent } from "./ci-events.ts";
import { intakeEventOf, type IntakeEvent } from "./events.ts";
import { settleCiRun } from "../verification/match.ts";
import { gitlabAuthorIsOutsider } from "./providers.ts";
import { applyPullRequestEvent, applyRequestComment } from "./pull-requests.ts";
import { transactionWithNotices } from "../events/index.ts";

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
        pullRequests: connectors.pullRequests,
        reviewerId: connectors.reviewerId,
        reviewerStatus: members.status,
        reviewerEmail: user.email,
        revokedAt: connectors.revokedAt,
        projectPrefix: projects.prefix,
        projectId: connectors.projectId,
      },
    })
    .from(intakeDeliveries)
    .innerJoin(connectors, eq(connectors.id, intakeDeliveries.connectorId))
    .innerJoin(projects, eq(projects.id, connectors.projectId))
    .leftJoin(members, and(eq(members.orgId, connectors.orgId), eq(members.userId, connectors.reviewerId)))
    .leftJoin(user, eq(user.id, connectors.reviewerId))
    .where(eq(intakeDeliveries.id, deliveryRowId));
  if (!row || row.processedAt) return { outcome: "already" };
  const { connector } = row;
  const cipher = await services.keyring.forOrg(services.db, connector.orgId);
  let event: IntakeEvent | null = null;
  let run: CiEvent | null = null;
  try {
    const body: unknown = connector.revokedAt ? null : JSON.parse(cipher.decrypt(row.payloadEnc));
    event = connector.revokedAt ? null : intakeEventOf(connector.provider, row.event, body);
    run = connector.revokedAt ? null : ciEventOf(connector.provider, row.event, body);
  } catch {
    event = null;
  }
  // Requests (and their comments) are taken only while the stream is on. Its reviewer no longer
  // an active member, a request still arrives, unassigned, and the card says what to do
  // (decision 032): losing an outsider's request would be worse than an item without a lane.
  const request = event?.kind === "pull_request" || event?.kind === "request_comment";
  if (request && !connector.pullRequests) event = null;
  const reviewerLeft = request && event !== null && connector.reviewerStatus !== "active";
  // Triage-all skips the check for issues and their comments; a request's author decides whether
  // it is taken at all, and its comments are always checked (decision 038).
  const source = { ...connector, token: cipher.decrypt(connector.tokenEnc) };
  const outsider =
    event === null || event.kind === "request_comment" || (connector.triageAll && event.kind !== "pull_request")
      ? false
      : (event.issue.outsider ?? (await gitlabAuthorIsOutsider(services.config, source, event.issue.authorId)));
  // A comment's own author: an outsider's comment is held until a person releases it.
  const commenterOutside =
    event === null || (event.kind !== "comment" && event.kind !== "request_comment") || event.action !== "created" || (connector.triageAll && event.kind === "comment")
      ? false
      : (event.comment.outsider ?? (await gitlabAuthorIsOutsider(services.config, source, event.comment.authorId)));
  const facts: ConnectorFacts = connector;
  return transactionWithNotices(services.db, async (tx) => {
    const [claimed] = await tx
      .update(intakeDeliveries)
      .set({ processedAt: services.clock.now() })
      .where(and(eq(intakeDeliveries.id, row.id), isNull(intakeDeliveries.processedAt)))
      .returning({ id: intakeDeliveries.id });
    if (!claimed) return { outcome: "already" };
    if (run) return { outcome: await settleCiRun(services, tx, { orgId: connector.orgId, projectId: connector.projectId }, run, connector.provider) };
    if (!event) return { outcome: "ignored" };
    if (event.kind === "request_comment") return { outcome: await applyRequestComment(services, tx, facts, event, commenterOutside) };
    if (event.kind === "pull_request") {
      const outcome = await applyPullRequestEvent(services, tx, { ...facts, reviewerId: reviewerLeft ? null : connector.reviewerId }, event, outsider);
      if (reviewerLeft) {
        const lastError = `${connector.reviewerEmail ?? "the pull request reviewer"} is no longer an active member: new review items arrive unassigned in todo; pick another reviewer on this card`;
        await tx.update(connectors).set({ lastError, lastErrorAt: services.clock.now() }).where(eq(connectors.id, connector.id));
      }
      return { outcome };
    }
    return { outcome: await applyIntakeEvent(services, tx, facts, event, { outsider, commenterOutside }) };
  });
}
