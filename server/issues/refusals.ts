import { DomainError } from "../errors.ts";
import { describeHolder, type Holder } from "./fencing.ts";

/** Refusals more than one operation gives, written once so they read alike wherever they are met. */

/** What someone refused because another holds the issue can do about it, by what they tried. */
const heldHints = {
  claim: "Call next_issue for other work, or wait for the lease to end.",
  cancel: "The holder cancels it with their claimToken, or release it first.",
  work: "Change work only while nobody holds it.",
} as const;

export function alreadyClaimed(identifier: string, holder: Holder | null, tried: keyof typeof heldHints): DomainError {
  return new DomainError(
    "ALREADY_CLAIMED",
    `${identifier} is held by ${holder ? describeHolder(holder) : "another agent"}`,
    heldHints[tried],
    { identifier, holder, expiresAt: holder?.expiresAt ?? null },
  );
}

export function selfReview(identifier: string): DomainError {
  return new DomainError(
    "SELF_REVIEW",
    `you submitted ${identifier} for review; the same principal cannot review it`,
    "Another person's agent must review it. One-principal orgs finish straight to done.",
    { identifier },
  );
}
