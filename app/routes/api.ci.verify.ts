import type { Route } from "./+types/api.ci.verify";
import { cliJson, readBody } from "../cli-api.server.ts";
import { withPrincipal } from "../../server/with-principal.ts";
import { DomainError } from "../../server/errors.ts";
import { authenticateCiKey, bearerKeyOf } from "../../server/orgs/index.ts";
import { attestVerification, type AttestInput } from "../../server/verification/attest.ts";

/**
 * POST /api/ci/verify: `retasc verify`, a CI key's attestation of one check for a finish of its
 * project (decision 045). Only a CI key (`rtci_…`) is accepted here, and it is accepted nowhere else.
 */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const principal = await authenticateCiKey(context.services.db, bearerKeyOf(request.headers.get("authorization")) ?? "");
    if (!principal) throw new DomainError("UNAUTHORIZED", "send a live CI key as Authorization: Bearer rtci_...", "Mint one with `retasc key mint --ci --project-id <id>` and give it to CI as RETASC_CI_KEY.");
    const ctx = withPrincipal(context.services, principal);
    return attestVerification({ ...ctx, principal }, (await readBody(request)) as AttestInput);
  });
}
