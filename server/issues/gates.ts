import { changeTypes } from "../../constants/change-types.ts";
import type { Principal } from "../context.ts";
import { DomainError } from "../errors.ts";
import type { SaveInput } from "./schemas.ts";

/**
 * What an agent's create must declare beyond a person's (decision 059): the gates hold agents,
 * who file in bulk and unseen; a person on the Dash, intake and imports pass without them.
 */
export const gatesApply = (principal: Principal) => principal.kind === "agent";

/** An agent's create names the kind of change, so usage can be split by it; a later update may correct it. */
export function requireChangeType(principal: Principal, input: SaveInput): void {
  if (!gatesApply(principal) || input.changeType) return;
  throw new DomainError(
    "CHANGE_TYPE_REQUIRED",
    "changeType is required to create an issue",
    `Pass changeType, one of ${changeTypes.join(", ")} (Conventional Commits): what the change is, not what it touches.`,
    { changeTypes },
  );
}

