import { CliError } from "../errors.ts";
import { ok, printJson } from "../output.ts";
import { asSession, requireSession } from "../session.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";

/**
 * `retasc issue unquarantine <PFX-N>`: releases an issue agents kept abandoning back to todo
 * (decision 055), as the signed-in person, through /api/cli/issues. Read the agents' notes
 * first (the issue page, or get_issue's `quarantine`).
 */
export async function issueUnquarantine(flags: OrgFlags & { json?: boolean }, positionals: string[]) {
  const identifier = positionals[0];
  if (!identifier) throw new CliError("INVALID_INPUT", "unquarantine needs the issue", "retasc issue unquarantine PFX-42");
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const released = await asSession<{ identifier: string; status: string }>(session, "/issues", { body: { orgId, action: "unquarantine", identifier } });
  if (flags.json) return printJson(released);
  ok(`${released.identifier} is ${released.status} again: agents can be handed it, and its count of abandoned claims starts over.`);
}
