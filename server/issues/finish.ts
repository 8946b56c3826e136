import type { Ctx } from "../context.ts";
import { sha256 } from "../crypto/index.ts";
import { sendNotices, type Notice } from "../events/index.ts";
import { hotBatchCall } from "./hot-batch.ts";
import type { SaveInput } from "./schemas.ts";
import { issueRowFrom } from "./store.ts";
import { renderIssueView, viewReadsFrom, type ViewReadsJson } from "./views.ts";
import { sqlCharge } from "../usage/meter.ts";

const PLAIN_FINISH_FIELDS = new Set(["identifier", "status", "claimToken"]);

/** `{identifier, status: "done", claimToken}` and nothing else: how every claim ends. */
export function isPlainFinish(input: SaveInput): input is SaveInput & { claimToken: string } {
  return input.status === "done" && input.claimToken !== undefined &&
    Object.entries(input).every(([field, value]) => value === undefined || PLAIN_FINISH_FIELDS.has(field));
}

/** The finished issue's columns an issue view reads (retasc_view_row, db/migrations/0080, nulls left out), not the whole row. */
type FinishOutcome = { outcome: "fallback" } | { outcome: "finished"; issue: Record<string, unknown>; reads: ViewReadsJson; notices: Notice[] };

/** retasc_finish's arguments by name. */
export interface FinishCall {
  orgId: string;
  identifier: string;
  tokenHash: string;
  now: string;
  userId: string | null;
  keyId: string | null;
  runtime: string | null;
  /** What the finish pays, when billing is on; a refused charge falls back to the general path, which refuses. */
  charge: ReturnType<typeof sqlCharge>;
}

/**
 * The finish of `identifier` under `claimToken` by the caller, as retasc_finish takes it.
 * Exported for the benches and tests that send the batch statement themselves.
 */
export function finishCall(ctx: Ctx, identifier: string, claimToken: string, now: Date): FinishCall {
  const { principal } = ctx;
  return {
    orgId: principal.orgId,
    identifier,
    tokenHash: sha256(claimToken),
    now: now.toISOString(),
    userId: principal.userId,
    keyId: principal.keyId,
    runtime: principal.runtime,
    charge: sqlCharge(ctx, "save_issue", "bookkeeping"),
  };
}

/** Finishes go out with the hot calls waiting on their pool (retasc_finishes in one statement, beside any claims, decision 124). */
const finishTogether = hotBatchCall<FinishCall, FinishOutcome>("retasc_finishes");

/**
 * Finishes held work as done in one statement (retasc_finish, the hot path's other half).
 * Returns null, having written nothing, for anything but a live token on open work with no
 * open blockers; the general path then answers with the right refusal.
 */
export async function finishHeld(ctx: Ctx, identifier: string, claimToken: string) {
  const { principal } = ctx;
  // retasc_finish finds the issue in the org, not within a member's projects (decision 042): a
  // scoped caller's finish takes the general path, whose lookup holds the scope, so a token kept
  // from before the scope narrowed finishes nothing outside it.
  if (principal.projectIds !== null) return null;
  const cipher = await ctx.keyring.forOrg(ctx.db, principal.orgId);
  const now = ctx.clock.now();
  const result = await finishTogether(ctx.db, finishCall(ctx, identifier, claimToken, now));
  if (result.outcome === "fallback") return null;
  sendNotices(ctx.db, result.notices);
  const row = issueRowFrom(result.issue);
  return renderIssueView(cipher, row, viewReadsFrom(result.reads, row.id, principal), now);
}
