import { redirect } from "react-router";
import type { Route } from "./+types/dash.switch-org";
import { currentOrgCookie, requireUser, safeNext } from "../auth.server.ts";
import { membershipOf } from "../../server/orgs/access.ts";
import { readForm } from "../forms.server.ts";

export function loader() {
  return redirect("/dash");
}

/** Sets the Dash's current org, after checking the person is an active member of it. */
export async function action({ request, context }: Route.ActionArgs) {
  const user = await requireUser(request, context);
  const form = await readForm(request);
  const orgId = String(form.get("orgId") ?? "");
  const membership = await membershipOf(context.services.db, orgId, user.id);
  if (membership?.status !== "active") return redirect("/dash");
  const back = safeNext(String(form.get("next") ?? ""), "/dash");
  return redirect(back, { headers: { "set-cookie": await currentOrgCookie.serialize(orgId) } });
}
