import { deploymentUrl, request } from "./api.js";
import { CliError } from "./errors.js";
import { readConfig } from "./store.js";

/**
 * The signed-in session for a deployment, or null.
 * @param {{ url?: string }} flags
 */
export function currentSession(flags = {}) {
  const url = deploymentUrl(flags);
  const session = readConfig().sessions?.[url];
  return session ? { url, ...session } : null;
}

/**
 * The session, or a CliError telling the person to sign in.
 * @param {{ url?: string }} flags
 */
export function requireSession(flags = {}) {
  const session = currentSession(flags);
  if (!session) {
    const url = deploymentUrl(flags);
    throw new CliError("UNAUTHORIZED", `not signed in to ${url}`, `Run \`retasc login${flags.url ? ` --url ${url}` : ""}\`.`);
  }
  return session;
}

/**
 * Calls an /api/cli endpoint as the signed-in person.
 * @param {{ url: string, token: string }} session
 * @param {string} path
 * @param {{ body?: unknown, query?: Record<string, string | undefined> }} [options]
 */
export function asSession(session, path, options = {}) {
  return request(session.url, `/api/cli${path}`, { ...options, token: session.token }).catch((error) => {
    if (error instanceof CliError && error.code === "UNAUTHORIZED") {
      error.hint = "Your session ended; run `retasc login` again.";
    }
    throw error;
  });
}

/** @param {{ url: string, token: string }} session */
export async function activeOrgs(session) {
  const { orgs } = await asSession(session, "/whoami");
  return /** @type {{ orgId: string, name: string, role: string, status: string }[]} */ (orgs).filter((o) => o.status === "active");
}
