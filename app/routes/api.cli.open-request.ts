import type { Route } from "./+types/api.cli.open-request";
import { cliJson, readBody } from "../cli-api.server.ts";
import { withPrincipal } from "../../server/with-principal.ts";
import { DomainError } from "../../server/errors.ts";
import { authenticateAgentKey, bearerKeyOf } from "../../server/orgs/index.ts";
import { openRequestFor } from "../../server/intake/open-request.ts";

/**
 * POST /api/cli/open-request `{ branch }`: `retasc done` asks for the open pull/merge request of
 * the branch it finishes (decision 063). Authenticated with the folder's agent key (`rtsc_…`),
 * as its finish over /mcp is; the server asks the key's project's connector, so the CLI holds no
 * forge token.
 */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const principal = await authenticateAgentKey(context.services.db, bearerKeyOf(request.headers.get("authorization")) ?? "");
    if (!principal) throw new DomainError("UNAUTHORIZED", "send a live agent key as Authorization: Bearer rtsc_...", "Run this in a folder bound with `retasc bind`.");
    return openRequestFor(withPrincipal(context.services, principal), await readBody(request));
  });
}
