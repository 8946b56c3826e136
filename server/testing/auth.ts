import { beforeAll } from "vitest";
import { createAuth, type Auth } from "../auth/index.ts";
import { useTestServices, type FileDatabase } from "./database.ts";

/**
 * The origin tests send better-auth requests from: one the app trusts without PUBLIC_URL
 * (a loopback name on the test configuration's PORT), so the Origin check passes.
 */
export const TEST_ORIGIN = "http://localhost:3000";

/** A JSON POST to one of better-auth's endpoints (`/sign-in/email`, ...), as the app's pages send it. */
export function postToAuth(
  auth: { handler(request: Request): Promise<Response> },
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return auth.handler(
    new Request(`${TEST_ORIGIN}/api/auth${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: TEST_ORIGIN, ...headers },
      body: JSON.stringify(body),
    }),
  );
}

/** A test file's own database and services with a better-auth instance on them, and a JSON POST to its endpoints. */
export function useTestAuth(): FileDatabase & { auth: Auth; post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response> } {
  const state = useTestServices() as FileDatabase & { auth: Auth };
  beforeAll(() => {
    state.auth = createAuth(state.services);
  });
  return Object.assign(state, { post: (path: string, body: unknown, headers: Record<string, string> = {}) => postToAuth(state.auth, path, body, headers) });
}
