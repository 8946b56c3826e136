import { describe, expect, it } from "vitest";
import { testConfig } from "../testing/db.ts";
import { postToAuth, TEST_ORIGIN, useTestAuth } from "../testing/auth.ts";
import { decideDeviceCode, lookUpDeviceCode } from "./device.ts";
import { CLI_CLIENT_ID, createAuth, sessionUser, signInMethods } from "./index.ts";

const origin = TEST_ORIGIN;
const host = new URL(TEST_ORIGIN).host;

const env = useTestAuth();
const post = env.post;

function cookieOf(response: Response): string {
  return response.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
}

async function signUp(email: string) {
  const response = await post("/sign-up/email", { email, password: "correct horse battery", name: "Ada" });
  expect(response.status).toBe(200);
  return cookieOf(response);
}

describe("sign-in methods", () => {
  it("offers email + password by default when embedded and social providers only when configured", () => {
    expect(signInMethods(testConfig())).toEqual({ emailPassword: true, social: [] });
    expect(
      signInMethods(
        testConfig({ DATABASE_URL: "postgres://x/y", GITHUB_CLIENT_ID: "id", GITHUB_CLIENT_SECRET: "secret" }),
      ),
    ).toEqual({ emailPassword: false, social: ["github"] });
    expect(signInMethods(testConfig({ RETASC_EMAIL_PASSWORD: "on", DATABASE_URL: "postgres://x/y" })).emailPassword).toBe(true);
  });

  it("refuses email sign-up when the operator turned it off", async () => {
    const closed = createAuth({ ...env.services, config: testConfig({ RETASC_EMAIL_PASSWORD: "off" }) });
    const response = await postToAuth(closed, "/sign-up/email", { email: "nobody@example.com", password: "correct horse battery", name: "N" });
    expect(response.status).toBeGreaterThanOrEqual(400);
  });
});

describe("email + password sessions", () => {
  it("signs a person up and resolves the session cookie to them", async () => {
    const cookie = await signUp("ada@example.com");
    const who = await sessionUser(env.auth, new Headers({ cookie, host }));
    expect(who?.email).toBe("ada@example.com");
    expect(await sessionUser(env.auth, new Headers({ host }))).toBeNull();
  });

  it("refuses a sign-in with the wrong password", async () => {
    await signUp("grace@example.com");
    const response = await post("/sign-in/email", { email: "grace@example.com", password: "wrong password!" });
    expect(response.status).toBe(401);
  });
});

describe("device authorization (RFC 8628)", () => {
  it("hands the CLI a bearer session once the signed-in person approves the code", async () => {
    const cookie = await signUp("linus@example.com");
    const codeResponse = await post("/device/code", { client_id: CLI_CLIENT_ID });
    expect(codeResponse.status).toBe(200);
    const code = (await codeResponse.json()) as {
      device_code: string;
      user_code: string;
      verification_uri: string;
      verification_uri_complete: string;
      interval: number;
    };
    expect(code.verification_uri).toBe(`${origin}/device`);
    expect(code.verification_uri_complete).toContain(`user_code=${code.user_code}`);

    const poll = () =>
      post("/device/token", {
        grant_type: "urn:ietf:params:oauth:grant-type:device_code",
        device_code: code.device_code,
        client_id: CLI_CLIENT_ID,
      });
    const pending = await poll();
    expect(pending.status).toBe(400);
    expect(((await pending.json()) as { error: string }).error).toBe("authorization_pending");

    // What the /device page does: looks the code up (claiming nothing), then approves it as the signed-in person.
    const me = (await sessionUser(env.auth, new Headers({ cookie, host })))!;
    expect(await lookUpDeviceCode(env.services.db, code.user_code, new Date())).toBe("pending");
    await decideDeviceCode(env.services.db, { userCode: code.user_code, userId: me.id, decision: "approved" }, new Date());

    // Polling faster than the interval is answered with slow_down; wait it out.
    await new Promise((r) => setTimeout(r, code.interval * 1000 + 50));
    const granted = await poll();
    expect(granted.status).toBe(200);
    const token = ((await granted.json()) as { access_token: string }).access_token;
    const who = await sessionUser(env.auth, new Headers({ authorization: `Bearer ${token}`, host }));
    expect(who?.email).toBe("linus@example.com");

    // A device code is redeemed once.
    await new Promise((r) => setTimeout(r, code.interval * 1000 + 50));
    expect((await poll()).status).toBe(400);
  });

  it("refuses an unknown client id", async () => {
    const response = await post("/device/code", { client_id: "someone-else" });
    expect(response.status).toBe(400);
  });

  it("reports a denied code to the polling CLI as access_denied", async () => {
    const cookie = await signUp("margaret@example.com");
    const code = (await (await post("/device/code", { client_id: CLI_CLIENT_ID })).json()) as {
      device_code: string;
      user_code: string;
    };
    const me = (await sessionUser(env.auth, new Headers({ cookie, host })))!;
    await decideDeviceCode(env.services.db, { userCode: code.user_code, userId: me.id, decision: "denied" }, new Date());
    const denied = await post("/device/token", {
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: code.device_code,
      client_id: CLI_CLIENT_ID,
    });
    expect(((await denied.json()) as { error: string }).error).toBe("access_denied");
  });
});
