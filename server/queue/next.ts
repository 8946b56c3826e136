import type { z } from "zod";
import type { Ctx } from "../context.ts";
import { randomToken } from "../crypto/index.ts";
import { sendNotices } from "../events/index.ts";
import { hotBatchCall } from "../issues/hot-batch.ts";
import { claimCapError, claimReply, leaseFields, type QuarantinedAtClaim, type TakenLease } from "./claim.ts";
import { emptyReply, type EmptyFigures } from "./dispatch.ts";
import { nextIssueInput } from "./schemas.ts";
import { slaSweepOrg } from "./sla.ts";
import { refuseWhileFrozen } from "../orgs/freeze.ts";
import { billingRefusal, sqlCharge } from "../usage/meter.ts";

/** An issue of the wave (retasc_next_wave): ready in the caller's lanes, not reserved; its title sealed. */
interface WaveRow {
  identifier: string;
  titleEnc: string;
  priority: number;
  effectiveLevel: number;
}

type NextIssueOutcome =
  | { outcome: "sla" | "cap" }
  /** The figures retasc_empty_poll counted (none when the key's project is outside its scope), and the session's claims. */
  | ({ outcome: "empty"; activeClaims: string[] } & Partial<EmptyFigures>)
  | { outcome: "billing"; code: "BILLING_INACTIVE" | "SPEND_CAP" }
  | (TakenLease & { outcome: "claimed"; otherClaims: number; wave: WaveRow[]; activeClaims: string[] })
  | (QuarantinedAtClaim & { outcome: "claimed" });

/** retasc_next_issue's arguments by name. */
export type NextIssueCall = ReturnType<typeof leaseFields> & {
  orgId: string;
  projectId: string | null;
  /** The member's project scope (server/orgs/scope.ts), or null for every project. */
  projectIds: string[] | null;
  allLanes: boolean;
  checkSla: boolean;
  cap: number;
  /** What a claim pays, when billing is on (retasc_charge, inside the claim's statement). */
  charge: ReturnType<typeof sqlCharge>;
};

/**
 * A next_issue call as retasc_next_issue takes it: the caller's org, lanes and cap, what it pays,
 * and the lease it would take under `claimToken`. Exported for the benches and tests that send
 * the batch statement themselves.
 */
export function nextIssueCall(ctx: Ctx, now: Date, claimToken: string, options: { allLanes: boolean; checkSla: boolean }): NextIssueCall {
  const { principal } = ctx;
  return {
    orgId: principal.orgId,
    projectId: principal.projectId,
    projectIds: principal.projectIds,
    allLanes: options.allLanes,
    checkSla: options.checkSla,
    cap: principal.claimCap ?? ctx.config.CLAIM_CAP_DEFAULT,
    charge: sqlCharge(ctx, "next_issue", "dispatch"),
    ...leaseFields(ctx, now, claimToken),
  };
}

/**
 * next_issue calls go out with the hot calls waiting on their pool (retasc_next_issues in one
 * statement, beside any finishes, decision 124), at one instant: the latest clock of the
 * statement's calls, so that a claim is never recorded before a finish the statement ran first.
 */
const claimNext = hotBatchCall<NextIssueCall, NextIssueOutcome>("retasc_next_issues", (calls, instant) =>
  calls.map((call) => ({ ...call, now: instant })),
);

/**
 * Claims the single most urgent dispatchable issue in the caller's lanes: one statement
 * (retasc_next_issue, shared with the calls that arrive alongside) checks deadlines, the key's
 * budget, picks and takes the lease. When a deadline threshold has passed unswept, the sweep
 * re-ranks and the claim reruns (checking again only a few times, so a stream of thresholds
 * cannot starve it).
 */
export async function nextIssue(ctx: Ctx, raw: z.input<typeof nextIssueInput> = {}) {
  const input = nextIssueInput.parse(raw);
  const { principal } = ctx;
  refuseWhileFrozen(principal);
  const cipher = await ctx.keyring.forOrg(ctx.db, principal.orgId);
  for (let attempt = 0; ; attempt++) {
    const claimToken = randomToken("rtclm_", 24);
    const call = nextIssueCall(ctx, ctx.clock.now(), claimToken, { allLanes: input.allLanes ?? false, checkSla: attempt < 3 });
    const result = await claimNext(ctx.db, call);
    switch (result.outcome) {
      case "sla":
        await slaSweepOrg(ctx, principal.orgId);
        continue;
      case "empty": {
        const { activeClaims, ...figures } = result;
        const empty = { ...emptyReply({ ready: 0, otherLanes: 0, awaitingTriage: 0, awaitingVerification: [], nextLapse: null, ...figures }, ctx.clock.now()), activeClaims };
        if (activeClaims.length === 0) return empty;
        return { ...empty, message: `${empty.message} You already hold ${activeClaims.join(", ")}: resume ${activeClaims.length > 1 ? "those" : "it"}.` };
      }
      case "cap":
        throw claimCapError(call.cap);
      case "billing":
        throw await billingRefusal(ctx.db, ctx, result.code);
      case "claimed":
        sendNotices(ctx.db, result.notices);
        // The lapse it found quarantined the issue, which it left (decision 055): pick again.
        if ("quarantined" in result) continue;
        // The wave and the session's other claims came in the claim's statement (retasc_next_issues).
        const wave = result.wave.map(({ titleEnc, ...issue }) => ({ ...issue, title: cipher.decrypt(titleEnc) }));
        return { ...claimReply(cipher, result, claimToken, result.otherClaims, principal), wave, activeClaims: result.activeClaims };
    }
  }
}
