import type { Route } from "./+types/api.cli.export";
import { cliQueryCtx } from "../cli-api.server.ts";
import { exportResponse } from "../download.server.ts";
import { toErrorBody } from "../errors.server.ts";
import { exportInput, exportOrg } from "../../server/transfer/export.ts";

/**
 * `retasc export`: the org's export streamed (`?orgId=&format=json|csv&table=issues|comments`),
 * for owners and admins. A refusal is the usual JSON error, before any byte of the export.
 */
export async function loader({ request, context }: Route.LoaderArgs) {
  try {
    const { ctx, params } = await cliQueryCtx(request, context);
    const input = exportInput.parse({ format: params.get("format") ?? undefined, table: params.get("table") ?? undefined });
    return exportResponse(await exportOrg(ctx, input));
  } catch (error) {
    const { status, body } = toErrorBody(error, context.log);
    return Response.json({ error: body }, { status, headers: { "cache-control": "no-store" } });
  }
}
