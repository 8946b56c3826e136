import { redirect } from "react-router";
import type { Route } from "./+types/auth.sign-out";
import { authOf, redirectWithCookies } from "../auth.server.ts";

export function loader() {
  return redirect("/");
}

/** Ends the browser session (POST only, so a link elsewhere cannot sign anyone out). */
export async function action({ request, context }: Route.ActionArgs) {
  const response = await authOf(context).api.signOut({ headers: request.headers, asResponse: true });
  return redirectWithCookies("/", response);
}
