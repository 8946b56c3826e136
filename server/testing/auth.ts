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
