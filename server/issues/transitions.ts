import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { members } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { DomainError, invalidInput } from "../errors.ts";
import { enqueue } from "../outbox/index.ts";
import { actorOf } from "../orgs/access.ts";
import { currentHolder, isLeaseLive, requireLiveToken } from "./fencing.ts";
import { alreadyClaimed, selfReview } from "./refusals.ts";
import type { SaveInput } from "./schemas.ts";
import type { WriteScope } from "./store.ts";
import type { IssueRow } from "./types.ts";

/**
 * People tied to an issue hear of it through the outbox, written in this transaction, so no notice is lost.
 * done and canceled reach the author alone and never the actor (server/notify/route.ts): with no
 * author, or the actor as author, nobody would hear them and no row is written (decision 104).
 */
export function notices(scope: WriteScope, row: IssueRow, change: { statusChanged: boolean; to: string; assigned: boolean }) {
  const base = { orgId: row.orgId, issueId: row.id, actorId: scope.ctx.principal.userId };
  const { to } = change;
  if (change.statusChanged && (to === "done" || to === "canceled" || to === "review")) {
    const unheard = to !== "review" && (row.authorId === null || row.authorId === base.actorId);
    return unheard ? [] : [() => enqueue(scope.tx, "notify.issue_event", { ...base, kind: to })];
  }
  return change.assigned ? [() => enqueue(scope.tx, "notify.issue_event", { ...base, kind: "assigned" as const })] : [];
}

/**
 * The status rules. Returns "finished" when the transition ends the caller's lease.
 * done and review finish held work and need the live token (but the system's intake on unheld
 * work); canceling held work needs it too; other status writes never touch the lease.
 */
export async function checkTransition(scope: WriteScope, row: IssueRow, input: SaveInput, to: string): Promise<"finished" | null> {
  const { ctx, now } = scope;
  const held = isLeaseLive(row, now);
  if (to === "canceled" && !input.cancelReason) {
    throw invalidInput("canceling needs a cancelReason", 'Pass cancelReason: "<why this will not be done>".');
  }
  if (to === "done" || to === "review") {
    if (!row.work) {
      if (to === "review") throw new DomainError("CONTAINER", `${row.identifier} is a container`, "Containers are closed with done, not reviewed.");
      return null;
    }
    // Intake settles unheld work its source settled (a merged pull request is done, an outsider's
    // one goes to its reviewer): no claim, no lease to end. Held work still needs its holder.
    if (ctx.principal.kind === "system" && !held) return null;
    // Accepting a review is the reviewer's claim's to do (decision 073); a person on the Dash who is
    // its reviewer, or an owner or admin, accepts an unheld one without a claim.
    if (to === "done" && row.status === "review" && !held && !input.claimToken) {
      if (row.submitterId && row.submitterId === ctx.principal.userId) throw selfReview(row.identifier);
      if (await personAccepts(scope, row)) return "finished";
      throw claimRequired(row.identifier);
    }
    await requireLiveToken(scope, row, input.claimToken);
    if (to === "done" && row.status === "review" && row.submitterId && row.submitterId === ctx.principal.userId) {
      throw selfReview(row.identifier);
    }
    return "finished";
  }
  if (to === "canceled") {
    if (!held) return null;
    if (!input.claimToken) throw alreadyClaimed(row.identifier, await currentHolder(scope.tx, row, now), "cancel");
    return "finished";
  }
  if (row.status === "review" && to === "todo" && input.claimToken) return "finished";
  return null;
}

/** A person (never an agent) who is the review's reviewer, or who runs the org. */
async function personAccepts(scope: WriteScope, row: IssueRow): Promise<boolean> {
  const { principal } = scope.ctx;
  if (principal.kind !== "human" || !principal.userId) return false;
  if (row.assigneeId === principal.userId) return true;
  const actor = await actorOf(scope.ctx, scope.tx);
  return actor.role === "owner" || actor.role === "admin";
}

/** A review is accepted under the reviewer's claim, which dispatch hands out like any work. */
export function claimRequired(identifier: string): DomainError {
  return new DomainError(
    "CLAIM_REQUIRED",
    `${identifier} is in review and nobody holds it: accepting it needs your claim of the review`,
    `Claim it first: claim_issue {identifier:"${identifier}"} (or next_issue, which hands reviews in your lane out ahead of new work), read its checkpoint, then save_issue {identifier:"${identifier}", status:"done", claimToken} with the claimToken you get.`,
    { identifier },
  );
}

/** A review lane is an active member other than the principal who submitted the work. */
export async function checkReviewer(tx: Db, ctx: Ctx, row: IssueRow, reviewerId: string | null, submitterId: string | null) {
  if (!reviewerId) {
    throw invalidInput(
      `${row.identifier} in review needs a reviewer`,
      'Pass assignee with the reviewer\'s email (another person than you), e.g. assignee:"reviewer@example.com".',
    );
  }
  if (submitterId && reviewerId === submitterId) throw selfReview(row.identifier);
  const member = await tx
    .select({ status: members.status })
    .from(members)
    .where(and(eq(members.orgId, ctx.principal.orgId), eq(members.userId, reviewerId)));
  if (member[0]?.status !== "active") {
    throw invalidInput("the reviewer is not an active member", "Pick an active member as reviewer.");
  }
}
