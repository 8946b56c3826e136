import { and, asc, eq, isNull } from "drizzle-orm";
import { z } from "zod";
import { connectors, projects, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { invalidInput, notFound } from "../errors.ts";
import { resolveAssignee } from "../issues/inputs.ts";
import { actorOf, recordOrgActivity, requireRole } from "../orgs/access.ts";
import { chargeNow } from "../usage/meter.ts";
import { webhookUrlOf } from "./urls.ts";
import { reachable } from "../orgs/scope.ts";

export const listConnectorsInput = z.object({});
export const revokeConnectorInput = z.object({
  connectorId: z.string().uuid().describe("from list_connectors"),
});
export const setConnectorReviewerInput = z.object({
  connectorId: z.string().uuid().describe("from list_connectors"),
  reviewer: z.string().trim().min(1).max(320).describe("the active member (email or user id) whose lane the next review items go to"),
});

/** The org's intake connectors, metadata and status only: secrets and tokens never leave the server. */
export async function listConnectors(ctx: Ctx, raw: z.input<typeof listConnectorsInput>) {
  listConnectorsInput.parse(raw);
  const rows = await ctx.db
    .select({
      id: connectors.id,
      provider: connectors.provider,
      repo: connectors.repo,
      baseUrl: connectors.baseUrl,
      intakeLabel: connectors.intakeLabel,
      tokenEnc: connectors.tokenEnc,
      triageAll: connectors.triageAll,
      pullRequests: connectors.pullRequests,
      reviewer: user.email,
      connectedAt: connectors.connectedAt,
      lastDeliveryAt: connectors.lastDeliveryAt,
      lastError: connectors.lastError,
      lastErrorAt: connectors.lastErrorAt,
      projectPrefix: projects.prefix,
      createdAt: connectors.createdAt,
      revokedAt: connectors.revokedAt,
    })
    .from(connectors)
    .innerJoin(projects, eq(projects.id, connectors.projectId))
    .leftJoin(user, eq(user.id, connectors.reviewerId))
    .where(reachable(ctx.principal, connectors))
    .orderBy(asc(connectors.createdAt));
  return {
    connectors: rows.map((row) => ({
      id: row.id,
      provider: row.provider,
      repo: row.repo,
      baseUrl: row.baseUrl,
      project: row.projectPrefix,
      intakeLabel: row.intakeLabel,
      tokenOnFile: row.tokenEnc !== null,
      triageAll: row.triageAll,
      /** The pull/merge request stream, with the reviewer's email (off when the reviewer left). */
      pullRequests: row.pullRequests && row.reviewer !== null,
      reviewer: row.pullRequests ? row.reviewer : null,
      status: row.revokedAt ? ("revoked" as const) : ("active" as const),
      /** Pending until the first verified delivery (GitHub's ping, GitLab's Test). */
      connection: row.connectedAt ? ("connected" as const) : ("pending" as const),
      webhookUrl: webhookUrlOf(ctx.config, row.provider, row.id),
      lastDeliveryAt: row.lastDeliveryAt?.toISOString() ?? null,
      lastError: row.lastError,
      lastErrorAt: row.lastErrorAt?.toISOString() ?? null,
      createdAt: row.createdAt.toISOString(),
      revokedAt: row.revokedAt?.toISOString() ?? null,
    })),
  };
}

/**
 * Disconnects a connector: its webhooks are refused from now on. Owner or admin;
 * idempotent (revoking a revoked connector reports when it was revoked).
 */
export async function revokeConnector(ctx: Ctx, raw: z.input<typeof revokeConnectorInput>) {
  const { connectorId } = revokeConnectorInput.parse(raw);
  const { orgId, userId } = ctx.principal;
  return ctx.db.transaction(async (tx) => {
    const rows = await tx
      .select({ id: connectors.id, revokedAt: connectors.revokedAt })
      .from(connectors)
      .where(and(eq(connectors.id, connectorId), eq(connectors.orgId, orgId)))
      .for("update");
    const row = rows[0];
    if (!row) throw notFound(`connector ${connectorId}`, "list_connectors shows your org's connectors.");
    requireRole(await actorOf(ctx, tx), ["owner", "admin"], "revoking a connector");
    if (row.revokedAt) return { connectorId, status: "revoked" as const, revokedAt: row.revokedAt.toISOString(), changed: false };
    const now = ctx.clock.now();
    await tx
      .update(connectors)
      .set({ revokedAt: now, revokedBy: userId })
      .where(and(eq(connectors.id, connectorId), isNull(connectors.revokedAt)));
    await recordOrgActivity(ctx, tx, "connector.revoked", { connectorId });
    await chargeNow(tx, ctx, { tool: "revoke_connector", tier: "plumbing", issueId: null }, now);
    return { connectorId, status: "revoked" as const, revokedAt: now.toISOString(), changed: true };
  });
}

/**
 * Gives a connector's pull/merge request stream another reviewer (owner or admin), e.g. when the
 * preset one left the org (decision 032): the next review items go to their lane, the stream is
 * on, and the card's last error is cleared. Items already filed keep their assignee.
 */
export async function setConnectorReviewer(ctx: Ctx, raw: z.input<typeof setConnectorReviewerInput>) {
  const input = setConnectorReviewerInput.parse(raw);
  const { orgId } = ctx.principal;
  return ctx.db.transaction(async (tx) => {
    const [row] = await tx
      .select({ id: connectors.id, revokedAt: connectors.revokedAt })
      .from(connectors)
      .where(and(eq(connectors.id, input.connectorId), eq(connectors.orgId, orgId)))
      .for("update");
    if (!row) throw notFound(`connector ${input.connectorId}`, "list_connectors shows your org's connectors.");
    requireRole(await actorOf(ctx, tx), ["owner", "admin"], "changing a connector's reviewer");
    if (row.revokedAt) throw invalidInput("the connector is revoked", "Connect the repository again.");
    const reviewerId = await resolveAssignee(tx, ctx, input.reviewer);
    const now = ctx.clock.now();
    await tx.update(connectors).set({ reviewerId, pullRequests: true, lastError: null, lastErrorAt: null }).where(eq(connectors.id, row.id));
    await recordOrgActivity(ctx, tx, "connector.reviewer_set", { connectorId: row.id });
    await chargeNow(tx, ctx, { tool: "set_connector_reviewer", tier: "plumbing", issueId: null }, now);
    return { connectorId: row.id, pullRequests: true, reviewerId };
  });
}
