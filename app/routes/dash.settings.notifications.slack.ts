import { redirect } from "react-router";
import type { Route } from "./+types/dash.settings.notifications.slack";
import { requireMember } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { completeSlackInstall } from "../../server/notify/slack.ts";

/** Slack's OAuth v2 redirect after an admin adds the app (server/notify/slack.ts). */
export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx } = await requireMember(request, context);
  const params = new URL(request.url).searchParams;
  const result = await attempt(context.log, () => completeSlackInstall(ctx, { code: params.get("code"), state: params.get("state"), error: params.get("error"), baseUrl: publicBaseUrl(request, context.services.config) }));
  return redirect(`/dash/settings/notifications?slack=${result.ok ? "installed" : "failed"}`);
}
