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

/** Where a person decides on `identifier`'s outside text: its triage box on the Dash (PUBLIC_URL, else this port on localhost). */
export function triagePlaceOf(config: { PUBLIC_URL?: string | undefined; PORT: number | string }, identifier: string): string {
  const base = config.PUBLIC_URL ? config.PUBLIC_URL.replace(/\/+$/, "") : `http://localhost:${config.PORT}`;
  return `${base}/dash/issues/${identifier}#triage`;
}

/**
 * The refusal of anything that would let outsiders' text in, or move it on, to any principal
 * but a person at a human session (docs/decisions/038): agent keys, session keys and OAuth
 * agent tokens alike. The hint sends the agent to other work; tellHuman names where a person
 * reads the text and decides. Nothing here tells an agent to accept.
 */
export function personOnly(config: { PUBLIC_URL?: string | undefined; PORT: number | string }, identifier: string, tried: string): DomainError {
  return new DomainError(
    "FORBIDDEN",
    `${tried} is for a person: ${identifier} came from outside the team, and only a person who has read its text lets it in`,
    "Leave it as it is and call next_issue for other work.",
    { identifier },
    `${identifier} came from outside the team and waits for a person to read it: accept or cancel it on the Dash at ${triagePlaceOf(config, identifier)}, or run \`retasc triage\` in a terminal.`,
  );
}
