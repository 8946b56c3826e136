import { and, asc, desc, eq, gt, isNotNull, lte } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import { checkpoints, issues, leases } from "../../db/schema/index.ts";
import { sql } from "drizzle-orm";
import { recordActivity } from "../activity/index.ts";
import type { Ctx } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { DomainError } from "../errors.ts";
import { actorOf, requireRole } from "../orgs/access.ts";
import { reachable } from "../orgs/scope.ts";
import { triagePlaceOf } from "./refusals.ts";
import { identifierSchema } from "./schemas.ts";
import { findIssue } from "./lookups.ts";
import { inTransaction, type WriteScope } from "./store.ts";
import type { IssueRow } from "./types.ts";

/**
 * Quarantine (decision 055): an issue whose claims were abandoned K times in a row is blocked
 * until a person releases it. The counting rule is SQL's alone (retasc_abandoned_claim, migration
 * 0039), called by the lapse's record (retasc_record_expiry: the sweep or the next claim) and by
 * a release (below); this module says so, shows it and releases it.
 */

/** Passes a claim its holder is releasing to the rule; true when this release quarantined the issue. Call before the release writes its note. */
export async function countAbandonedClaim(scope: WriteScope, row: IssueRow): Promise<boolean> {
  if (!row.leaseId) return false;
  const [result] = await query<{ quarantined: boolean }>(
    scope.tx,
    sql`select retasc_abandoned_claim(${row.id}::text, ${row.leaseId}::text, ${scope.ctx.principal.orgId}::text, ${scope.now.toISOString()}::timestamptz) as quarantined`,
  );
  return result!.quarantined;
}

const placeOf = (config: Ctx["config"], identifier: string) => triagePlaceOf(config, identifier).replace(/#triage$/, "#quarantine");

/** What a claim or a status change of a quarantined issue is told. */
export function quarantinedRefusal(config: Ctx["config"], row: Pick<IssueRow, "identifier" | "quarantineReason">, tried: string): DomainError {
  return new DomainError(
    tried === "claim" ? "STATUS_NOT_CLAIMABLE" : "FORBIDDEN",
    `${row.identifier} is blocked: ${row.quarantineReason ?? "quarantined"}`,
    "Leave it: agents kept abandoning it, and only a person releases it. Call next_issue for other work.",
    { identifier: row.identifier, status: "blocked", quarantined: true },
    `${row.identifier} was quarantined after agents abandoned it again and again: read their notes and release it on the Dash at ${placeOf(config, row.identifier)}, or run \`retasc issue unquarantine ${row.identifier}\`.`,
  );
}

/**
 * What a read of a quarantined issue shows: the reason, since when, and each abandoned claim
 * (newest first) with the notes its agent wrote (release reasons), kept as written; the latest
 * checkpoint's gotchas are the view's own `checkpoint`.
 */
export async function quarantineOf(db: Db, cipher: OrgCipher, row: IssueRow) {
  if (!row.quarantinedAt) return null;
  const notes = await db
    .select({ fence: leases.fence, runtime: leases.runtime, endReason: leases.endReason, noteEnc: checkpoints.noteEnc })
    .from(leases)
    .leftJoin(checkpoints, eq(checkpoints.leaseId, leases.id))
    .where(and(eq(leases.issueId, row.id), gt(leases.fence, row.abandonedFence - row.abandonedClaims), lte(leases.fence, row.abandonedFence)))
    .orderBy(asc(leases.fence), asc(checkpoints.createdAt));
  return {
    reason: row.quarantineReason,
    since: row.quarantinedAt.toISOString(),
    claims: notes
      .filter((n, i) => notes.findIndex((m) => m.fence === n.fence) === i)
      .map((n) => ({
        fence: n.fence,
        runtime: n.runtime,
        ended: n.endReason,
        notes: notes.filter((m) => m.fence === n.fence).map((m) => cipher.decrypt(m.noteEnc)).filter((t): t is string => !!t),
      }))
      .reverse(),
  };
}

/**
 * The Fleet's list of quarantined issues in the viewer's projects (decision 062), newest first:
 * each with its reason and how a person releases it (the issue page's button, or the command).
 */
export async function quarantinedIssues(ctx: Ctx, limit = 50) {
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const rows = await ctx.db
    .select({ identifier: issues.identifier, titleEnc: issues.titleEnc, reason: issues.quarantineReason, since: issues.quarantinedAt, claims: issues.abandonedClaims })
    .from(issues)
    .where(and(reachable(ctx.principal, issues), eq(issues.status, "blocked"), isNotNull(issues.quarantinedAt)))
    .orderBy(desc(issues.quarantinedAt), asc(issues.identifier))
    .limit(limit);
  return rows.map((r) => ({
    identifier: r.identifier,
    title: cipher.decrypt(r.titleEnc) ?? "",
    reason: r.reason ?? "quarantined",
    since: r.since!.toISOString(),
    abandonedClaims: r.claims,
    release: { page: `/dash/issues/${encodeURIComponent(r.identifier)}#quarantine`, command: `retasc issue unquarantine ${r.identifier}` },
  }));
}
export type QuarantinedIssue = Awaited<ReturnType<typeof quarantinedIssues>>[number];

export const unquarantineInput = z.object({ identifier: identifierSchema });

/**
 * A person releases a quarantined issue: back to todo, its run of abandoned claims at zero, so
 * the next claims count afresh. Only a person at a human session, of any role (agents are refused
 * FORBIDDEN with what to tell their human): the agents' notes are for a person to read first.
 */
export async function unquarantineIssue(ctx: Ctx, raw: z.input<typeof unquarantineInput>) {
  const input = unquarantineInput.parse(raw);
  if (ctx.principal.kind !== "human") {
    const row = await findIssue(ctx.db, ctx.principal, input.identifier);
    throw quarantinedRefusal(ctx.config, row, "release");
  }
  requireRole(await actorOf(ctx), ["owner", "admin", "member"], "releasing a quarantined issue");
  return inTransaction(ctx, async (scope) => {
    const row = await findIssue(scope.tx, ctx.principal, input.identifier, { forUpdate: true });
    if (!row.quarantinedAt) {
      throw new DomainError("CONFLICT", `${row.identifier} is not quarantined`, "Nothing to release; its status is changed as any other.", { identifier: row.identifier, status: row.status });
    }
    await scope.tx
      .update(issues)
      .set({ status: "todo", quarantinedAt: null, quarantineReason: null, abandonedClaims: 0, updatedAt: scope.now })
      .where(eq(issues.id, row.id));
    await recordActivity(scope, { issueId: row.id, kind: "unquarantined", facts: { from: "blocked", to: "todo", claims: row.abandonedClaims, reason: row.quarantineReason } });
    await ctx.events.publish(scope.tx, { orgId: ctx.principal.orgId, kind: "issue.updated", issueId: row.id, identifier: row.identifier, status: "todo" });
    return { identifier: row.identifier, status: "todo" as const, released: true as const };
  });
}
