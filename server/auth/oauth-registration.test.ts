import { afterAll, beforeAll, expect, test } from "vitest";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { REGISTRATION_LIMITS } from "./oauth.ts";

/**
 * Finding 8 of issue 37: open dynamic client registration (RFC 7591) stored whatever it was sent,
 * as often as it was sent (200 registrations in 0.9 s; one with a 200 kB client_name and 2,000
 * redirect URIs). A registration is now size-checked before the provider reads it, and each
 * client address may register RATE_LIMIT_OAUTH_REGISTER_PER_HOUR clients an hour.
 */
let app: AppProcess;
beforeAll(async () => {
  app = await startApp({ RATE_LIMIT_OAUTH_REGISTER_PER_HOUR: "8" });
});
afterAll(async () => {
  await app?.stop();
});

const register = (body: Record<string, unknown>) =>
  fetch(`${app.url}/api/auth/oauth2/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const callback = "http://127.0.0.1:7777/callback";

test("a registration is size-checked: the name, the number and length of redirect URIs, every other field", async () => {
  const refusals = [
    [{ client_name: "x".repeat(200_000), redirect_uris: [callback] }, "invalid_client_metadata"],
    [{ client_name: "many", redirect_uris: Array.from({ length: 2_000 }, (_, i) => `http://127.0.0.1:${1000 + i}/callback`) }, "invalid_redirect_uri"],
    [{ client_name: "eleven", redirect_uris: Array.from({ length: REGISTRATION_LIMITS.redirectUris + 1 }, (_, i) => `http://127.0.0.1:${1000 + i}/cb`) }, "invalid_redirect_uri"],
    [{ client_name: "long uri", redirect_uris: [`${callback}?${"q".repeat(REGISTRATION_LIMITS.fieldChars)}`] }, "invalid_redirect_uri"],
  ] as const;
  for (const [body, error] of refusals) {
    const response = await register(body);
    expect(response.status, error).toBe(400);
    expect(await response.json()).toMatchObject({ error });
  }
  const named = await register({ client_name: "n".repeat(REGISTRATION_LIMITS.nameChars), redirect_uris: [callback] });
  expect(named.status, await named.clone().text()).toBe(201);
});

test("one client address registers a bounded number of clients an hour, then gets 429 with Retry-After", async () => {
  // The limit is 8 an hour: the first test spent 5 of them (refused ones count too).
  const statuses = [];
  for (let i = 0; i < 5; i++) statuses.push((await register({ client_name: `client ${i}`, redirect_uris: [callback] })).status);
  expect(statuses).toEqual([201, 201, 201, 429, 429]);
  const refused = await register({ client_name: "one more", redirect_uris: [callback] });
  expect(refused.status).toBe(429);
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(60);
});
