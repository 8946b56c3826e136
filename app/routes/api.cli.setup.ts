import type { Route } from "./+types/api.cli.setup";
import { cliJson, readBody } from "../cli-api.server.ts";
import { redeemSetupCode } from "../../server/orgs/setup-codes.ts";

/**
 * `retasc bind --setup`: trades a Dash-issued setup code for an agent key. No session:
 * the code itself (single-use, ten minutes) is the proof.
 */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const body = await readBody(request);
    return redeemSetupCode(context.services, {
      code: String(body.code ?? ""),
      runtime: typeof body.runtime === "string" ? body.runtime : undefined,
    });
  });
}
