import type { Route } from "./+types/dash.settings.transfer.export";
import { requireMember } from "../auth.server.ts";
import { exportResponse } from "../download.server.ts";
import { toErrorBody } from "../errors.server.ts";
import { exportInput, exportOrg } from "../../server/transfer/export.ts";

/** The Dash's download of the current org's export (`?format=json|csv&table=issues|comments`), owners and admins. */
export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx } = await requireMember(request, context);
  try {
    const params = new URL(request.url).searchParams;
    const input = exportInput.parse({ format: params.get("format") ?? undefined, table: params.get("table") ?? undefined });
    return exportResponse(await exportOrg(ctx, input));
  } catch (error) {
    const { status, body } = toErrorBody(error, context.log);
    return Response.json({ error: body }, { status });
  }
}
