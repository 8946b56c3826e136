import type { Route } from "./+types/api.cli.issues";
import { cliOrgAction } from "../cli-api.server.ts";
import { unquarantineIssue } from "../../server/issues/quarantine.ts";

/**
 * `retasc issue unquarantine <PFX-N>`: a person releases an issue agents kept abandoning
 * (decision 055). Only a person's session reaches it: agent keys and OAuth tokens are not
 * sessions (requireCliUser), and unquarantineIssue refuses any principal but a person.
 * `{ orgId, action: "unquarantine", identifier }`.
 */
export function action({ request, context }: Route.ActionArgs) {
  return cliOrgAction(request, context, {
    unquarantine: (ctx, input) => unquarantineIssue(ctx, input as { identifier: string }),
  });
}
