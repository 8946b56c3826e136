import type { Route } from "./+types/api.cli.import.linear";
import { cliJson, cliOrgAction, cliQueryCtx } from "../cli-api.server.ts";
import { linearImportStatus, listLinearTeams, listTeamsInput, startInput, startLinearImport } from "../../server/transfer/linear/index.ts";

/** `retasc import linear` polls its run: `?orgId=&runId=` answers phase, done of total, and the last import's date. */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx, params } = await cliQueryCtx(request, context);
    return linearImportStatus(ctx, { runId: params.get("runId") ?? "" });
  });
}

/**
 * `{ orgId, action: "teams" | "start", apiKey, ... }`: the Linear key travels in the body only
 * (never a URL, so no access log holds it) and is used for this run alone (decision 025).
 */
export function action({ request, context }: Route.ActionArgs) {
  return cliOrgAction(request, context, {
    teams: (ctx, input) => listLinearTeams(ctx, listTeamsInput.parse(input)),
    start: (ctx, input) => startLinearImport(ctx, startInput.parse(input)),
  });
}
