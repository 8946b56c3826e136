/** The origin tests send better-auth requests from (the app's own, so the Origin check passes). */
export const TEST_ORIGIN = "http://retasc.test";

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
