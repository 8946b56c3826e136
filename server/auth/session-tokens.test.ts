import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { session, user, verification } from "../../db/schema/index.ts";
import { postToAuth, TEST_ORIGIN, useTestAuth } from "../testing/auth.ts";
import { testConfig } from "../testing/db.ts";
import { decideDeviceCode } from "./device.ts";
import { CLI_CLIENT_ID, createAuth, sessionUser } from "./index.ts";
import { sessionTokenDigest } from "./session-tokens.ts";

const host = new URL(TEST_ORIGIN).host;

const env = useTestAuth();
const post = env.post;

/** Signs a person up; returns the session token better-auth handed out and the session cookie. */
async function signUp(email: string) {
  const response = await post("/sign-up/email", { email, password: "correct horse battery", name: "Ada" });
  expect(response.status).toBe(200);
  const { token } = (await response.json()) as { token: string };
  const cookie = response.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const [row] = await env.services.db.select({ id: user.id }).from(user).where(eq(user.email, email));
  return { token, cookie, userId: row!.id };
}

async function signIn(email: string): Promise<string> {
  const response = await post("/sign-in/email", { email, password: "correct horse battery" });
  expect(response.status).toBe(200);
  return ((await response.json()) as { token: string }).token;
}

async function storedTokens(userId: string): Promise<string[]> {
  const rows = await env.services.db.select({ token: session.token }).from(session).where(eq(session.userId, userId));
  return rows.map((r) => r.token);
}

/** /api/cli's authentication (requireCliUser calls sessionUser with the request's Authorization and Host). */
function cliUser(authorization: string) {
  return sessionUser(env.auth, new Headers({ authorization, host }));
}

const bearer = (token: string) => new Headers({ authorization: `Bearer ${token}`, host });

describe("session tokens at rest", () => {
  it("stores a digest, which works neither as a cookie session nor as a Bearer token on /api/cli", async () => {
    const { token, cookie, userId } = await signUp("at-rest@example.com");
    const stored = await storedTokens(userId);
    expect(stored).toEqual([sessionTokenDigest(token)]);
    expect(stored[0]).not.toContain(token);

    expect((await sessionUser(env.auth, new Headers({ cookie, host })))?.email).toBe("at-rest@example.com");
    expect((await sessionUser(env.auth, bearer(token)))?.email).toBe("at-rest@example.com");
    expect((await cliUser(`Bearer ${token}`))?.email).toBe("at-rest@example.com");

    // What a read of the database yields:
    expect(await sessionUser(env.auth, bearer(stored[0]!))).toBeNull();
    expect(await cliUser(`Bearer ${stored[0]}`)).toBeNull();
    const signed = cookie.replace(/=[^.;]+/, `=${stored[0]}`);
    expect(await sessionUser(env.auth, new Headers({ cookie: signed, host }))).toBeNull();
  });

  it("hands the CLI a device-flow token that works while only its digest is stored", async () => {
    const { userId } = await signUp("device-at-rest@example.com");
    const code = (await (await post("/device/code", { client_id: CLI_CLIENT_ID })).json()) as { device_code: string; user_code: string; interval: number };
    await decideDeviceCode(env.services.db, { userCode: code.user_code, userId, decision: "approved" }, new Date());
    const granted = await post("/device/token", {
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: code.device_code,
      client_id: CLI_CLIENT_ID,
    });
    expect(granted.status).toBe(200);
    const accessToken = ((await granted.json()) as { access_token: string }).access_token;
    expect(await storedTokens(userId)).toContain(sessionTokenDigest(accessToken));
    expect((await cliUser(`Bearer ${accessToken}`))?.email).toBe("device-at-rest@example.com");
    expect(await cliUser(`Bearer ${sessionTokenDigest(accessToken)}`)).toBeNull();
  });

  it("ends the session on sign-out, one session by its token, and all of a person's sessions", async () => {
    const first = await signUp("ends@example.com");
    const secondToken = await signIn("ends@example.com");
    const thirdToken = await signIn("ends@example.com");
    expect(await storedTokens(first.userId)).toHaveLength(3);

    const signOut = await post("/sign-out", {}, { cookie: first.cookie });
    expect(signOut.status).toBe(200);
    expect(await sessionUser(env.auth, new Headers({ cookie: first.cookie, host }))).toBeNull();
    expect(await storedTokens(first.userId)).toHaveLength(2);

    const revoked = await post("/revoke-session", { token: secondToken }, { authorization: `Bearer ${thirdToken}` });
    expect(revoked.status).toBe(200);
    expect(await sessionUser(env.auth, bearer(secondToken))).toBeNull();
    expect(await storedTokens(first.userId)).toEqual([sessionTokenDigest(thirdToken)]);

    // A stored digest does not name a session to revoke either.
    const fourth = await signIn("ends@example.com");
    await post("/revoke-session", { token: sessionTokenDigest(fourth) }, { authorization: `Bearer ${thirdToken}` });
    expect(await sessionUser(env.auth, bearer(fourth))).not.toBeNull();

    expect((await post("/revoke-sessions", {}, { authorization: `Bearer ${thirdToken}` })).status).toBe(200);
    expect(await storedTokens(first.userId)).toEqual([]);
  });

  it("refreshes a session found by its token and keeps the cookie's token", async () => {
    const { token, cookie, userId } = await signUp("refresh@example.com");
    // Due for refresh: better-auth extends a session once a day of its week has passed.
    const soon = new Date(Date.now() + 60 * 60 * 1000);
    await env.services.db.update(session).set({ expiresAt: soon }).where(eq(session.userId, userId));
    const response = await env.auth.handler(new Request(`${TEST_ORIGIN}/api/auth/get-session`, { headers: { cookie } }));
    expect(((await response.json()) as { session: { token: string } }).session.token).toBe(token);
    const refreshed = response.headers.getSetCookie().find((c) => c.startsWith("better-auth.session_token="))!;
    expect(decodeURIComponent(refreshed.split(";")[0]!.split("=")[1]!).split(".")[0]).toBe(token);
    const [row] = await env.services.db.select().from(session).where(eq(session.userId, userId));
    expect(row!.token).toBe(sessionTokenDigest(token));
    expect(row!.expiresAt.getTime()).toBeGreaterThan(soon.getTime() + 24 * 60 * 60 * 1000);
  });

  it("turns off the endpoints that would hand stored tokens back", async () => {
    const { token } = await signUp("listing@example.com");
    const listed = await env.auth.handler(new Request(`${TEST_ORIGIN}/api/auth/list-sessions`, { headers: { authorization: `Bearer ${token}` } }));
    expect(listed.status).toBe(404);
    expect((await post("/revoke-other-sessions", {}, { authorization: `Bearer ${token}` })).status).toBe(404);
    expect(await sessionUser(env.auth, bearer(token))).not.toBeNull();
  });

  it("stores an OAuth sign-in's state as a digest as well", async () => {
    const config = testConfig({ GITHUB_CLIENT_ID: "id", GITHUB_CLIENT_SECRET: "secret" });
    const social = createAuth({ ...env.services, config });
    const identifiersNow = async () => (await env.services.db.select({ identifier: verification.identifier }).from(verification)).map((r) => r.identifier);
    const before = new Set(await identifiersNow());
    const started = await postToAuth(social, "/sign-in/social", { provider: "github", callbackURL: "/dash" });
    expect(started.status).toBe(200);
    const state = new URL(((await started.json()) as { url: string }).url).searchParams.get("state")!;
    expect(state).toBeTruthy();
    // Only the row this sign-in wrote: the file's database holds other tests' rows too.
    const identifiers = (await identifiersNow()).filter((identifier) => !before.has(identifier));
    expect(identifiers).toHaveLength(1);
    expect(identifiers.some((identifier) => identifier.includes(state))).toBe(false);
  });
});
