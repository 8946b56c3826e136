import { deploymentUrl, request, type RequestOptions, type UrlFlag } from "./api.ts";
import { CliError } from "./errors.ts";
import { readConfig, type Session } from "./store.ts";
import type { CliWhoami, OrgOfUser } from "./wire.ts";

/** A stored session with the deployment it belongs to. */
export type SignedIn = Session & { url: string };

/** The signed-in session for a deployment, or null. */
export function currentSession(flags: UrlFlag = {}): SignedIn | null {
  const url = deploymentUrl(flags);
  const session = readConfig().sessions?.[url];
  return session ? { url, ...session } : null;
}

/** The session, or a CliError telling the person to sign in. */
export function requireSession(flags: UrlFlag = {}): SignedIn {
  const session = currentSession(flags);
  if (!session) {
    const url = deploymentUrl(flags);
    throw new CliError("UNAUTHORIZED", `not signed in to ${url}`, `Run \`retasc login${flags.url ? ` --url ${url}` : ""}\`.`);
  }
  return session;
}

/** Calls an /api/cli endpoint as the signed-in person; `T` is the endpoint's reply. */
export function asSession<T>(session: { url: string; token: string }, path: string, options: Pick<RequestOptions, "body" | "query"> = {}): Promise<T> {
  return request<T>(session.url, `/api/cli${path}`, { ...options, token: session.token }).catch((error: unknown) => {
    // Only the session's own refusal: an import source refusing its token is UNAUTHORIZED too, with its own hint.
    if (error instanceof CliError && error.code === "UNAUTHORIZED" && /not signed in|session/i.test(error.message)) {
      error.hint = "Your session ended; run `retasc login` again.";
    }
    throw error;
  });
}

export async function activeOrgs(session: { url: string; token: string }): Promise<OrgOfUser[]> {
  const { orgs } = await asSession<CliWhoami>(session, "/whoami");
  return orgs.filter((o) => o.status === "active");
}
