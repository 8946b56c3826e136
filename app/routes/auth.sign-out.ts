import { redirect } from "react-router";
import type { Route } from "./+types/auth.sign-out";
import { authOf, redirectWithCookies, safeNext } from "../auth.server.ts";

export function loader() {
  return redirect("/");
}

/**
 * Ends the browser session (POST only, so a link elsewhere cannot sign anyone out), then goes
 * home or to `?next=` on this site (the join page sends a person signed in as someone else back to it).
 */
export async function action({ request, context }: Route.ActionArgs) {
  const response = await authOf(context).api.signOut({ headers: request.headers, asResponse: true });
  return redirectWithCookies(safeNext(new URL(request.url).searchParams.get("next"), "/"), response);
}
