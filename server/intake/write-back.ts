import { and, eq } from "drizzle-orm";
import { connectors, intakeLinks, issues } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import { WRITE_BACK_MARKER } from "./events.ts";
import { OutboundRefused } from "../outbound/address.ts";
import { closeAtSource, TokenRefused } from "./providers.ts";

/**
 * The intake.write_back job: a synced issue became done or canceled, so its source is closed
 * with a comment naming the Retasc identifier (and the cancel reason). Only with a token on
 * file, only while the link's source is open, only while the issue is still terminal. Repeats
 * are safe (providers.ts closeAtSource); afterwards the link is marked closed. A refused token
 * is recorded on the connector and not retried (TokenRefused is permanent for the runner); so is a
 * base URL the outbound guard refuses, with a label that cannot tell whether anything listens there.
 */
export async function writeBack(services: Services, payload: { orgId: string; issueId: string }) {
  const [row] = await services.db
    .select({
      identifier: issues.identifier,
      status: issues.status,
      cancelReasonEnc: issues.cancelReasonEnc,
      sourceNumber: intakeLinks.sourceNumber,
      sourceId: intakeLinks.sourceId,
      sourceOpen: intakeLinks.sourceOpen,
      kind: intakeLinks.kind,
      connectorId: connectors.id,
      provider: connectors.provider,
      repo: connectors.repo,
      baseUrl: connectors.baseUrl,
      tokenEnc: connectors.tokenEnc,
      revokedAt: connectors.revokedAt,
    })
    .from(intakeLinks)
    .innerJoin(issues, eq(issues.id, intakeLinks.issueId))
    .innerJoin(connectors, eq(connectors.id, intakeLinks.connectorId))
    .where(and(eq(intakeLinks.issueId, payload.issueId), eq(intakeLinks.orgId, payload.orgId)));
  // A review item ending says nothing the request's own page does not: requests are never written back.
  if (!row || row.kind !== "issue" || !row.sourceOpen || row.revokedAt || !row.tokenEnc) return { outcome: "skipped" as const };
  if (row.status !== "done" && row.status !== "canceled") return { outcome: "skipped" as const };
  const cipher = await services.keyring.forOrg(services.db, payload.orgId);
  const reason = row.status === "canceled" ? cipher.decrypt(row.cancelReasonEnc) : null;
  const marker = `${WRITE_BACK_MARKER} ${row.identifier} -->`;
  const comment = [`${row.status === "done" ? "Done" : "Canceled"} in Retasc as ${row.identifier}.`, reason ? `Reason: ${reason}` : null, marker]
    .filter(Boolean)
    .join("\n\n");
  const now = services.clock.now();
  try {
    const result = await closeAtSource(
      services.config,
      { provider: row.provider, repo: row.repo, baseUrl: row.baseUrl, token: cipher.decrypt(row.tokenEnc) },
      row.sourceNumber,
      comment,
      marker,
      row.status === "done" ? "completed" : "not_planned",
    );
    await services.db.transaction(async (tx) => {
      await tx.update(intakeLinks).set({ sourceOpen: false }).where(and(eq(intakeLinks.connectorId, row.connectorId), eq(intakeLinks.sourceId, row.sourceId)));
      await tx.update(connectors).set({ lastError: null, lastErrorAt: null }).where(eq(connectors.id, row.connectorId));
    });
    return { outcome: "closed" as const, ...result };
  } catch (error) {
    const label =
      error instanceof TokenRefused
        ? `write-back token refused (${error.status})`
        : error instanceof OutboundRefused
          ? `write-back refused: ${error.message}`
          : "write-back failed";
    await services.db.update(connectors).set({ lastError: label, lastErrorAt: now }).where(eq(connectors.id, row.connectorId));
    throw error;
  }
}
