import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { account } from "../../db/schema/index.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { FakeProvider, type Identity } from "../../test/fakes/oauth-provider.ts";

/**
 * GitHub and Google sign-in against the built app over HTTP, with local fake providers standing
 * in for github.com / api.github.com and accounts.google.com / googleapis.com (test/fakes/oauth-provider.ts,
 * reached through GITHUB_OAUTH_URL, GITHUB_API_URL, GOOGLE_OAUTH_URL, GOOGLE_TOKEN_URL, GOOGLE_USERINFO_URL).
 */

/** Cookies of one browser, by name. */
class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair!.indexOf("=");
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1);
      if (value === "" || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }
}

let database: TestDatabase | undefined;
let app: AppProcess;
const github = new FakeProvider("github", "gh-client-id", "gh-client-secret");
const google = new FakeProvider("google", "google-client-id.apps.test", "google-client-secret");

beforeAll(async () => {
  await Promise.all([github.start(), google.start()]);
  database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : undefined;
  app = await startApp({
    ...(database ? { DATABASE_URL: database.url! } : {}),
    RETASC_EMAIL_PASSWORD: "on",
    // Every simulated browser comes from 127.0.0.1; the per-address sign-in limit is not under test.
    RATE_LIMIT_SIGNIN_PER_MIN: "1000",
    GITHUB_CLIENT_ID: github.clientId,
    GITHUB_CLIENT_SECRET: github.clientSecret,
    GITHUB_OAUTH_URL: github.url,
    GITHUB_API_URL: `${github.url}/api`,
    GOOGLE_CLIENT_ID: google.clientId,
    GOOGLE_CLIENT_SECRET: google.clientSecret,
    GOOGLE_OAUTH_URL: google.url,
    GOOGLE_TOKEN_URL: `${google.url}/token`,
    GOOGLE_USERINFO_URL: `${google.url}/v1/userinfo`,
  });
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await database?.close();
  await Promise.all([github.stop(), google.stop()]);
});

interface SignInOutcome {
  /** Where the app sent the browser after the provider came back. */
  landedOn: URL;
  user: { id: string; email: string; name: string } | null;
}

/** A fresh browser signs in with `provider`, the fake consenting as `identity`. */
async function socialSignIn(provider: FakeProvider, identity: Identity): Promise<SignInOutcome> {
  const jar = new CookieJar();
  provider.nextIdentity = identity;
  const start = await fetch(`${app.url}/api/auth/sign-in/social`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: app.url },
    body: JSON.stringify({ provider: provider.kind, callbackURL: "/dash", errorCallbackURL: "/auth/sign-in" }),
  });
  expect(start.status, await start.clone().text()).toBe(200);
  jar.take(start);
  const { url: authorizeUrl } = (await start.json()) as { url: string };
  expect(authorizeUrl.startsWith(`${provider.url}${provider.paths.authorize}?`)).toBe(true);

  const consent = await fetch(authorizeUrl, { redirect: "manual" });
  expect(consent.status, await consent.clone().text()).toBe(302);
  const callback = await fetch(consent.headers.get("location")!, {
    redirect: "manual",
    headers: { cookie: jar.header() },
  });
  expect(callback.status).toBe(302);
  jar.take(callback);
  const landedOn = new URL(callback.headers.get("location")!, app.url);

  const session = await fetch(`${app.url}/api/auth/get-session`, { headers: { cookie: jar.header() } });
  expect(session.status).toBe(200);
  const body = (await session.json()) as { user: SignInOutcome["user"] } | null;
  return { landedOn, user: body?.user ?? null };
}

function identity(email: string, name: string): Identity {
  return { id: String(crypto.randomInt(1, 2 ** 31)), email, name };
}

describe(`GitHub and Google sign-in over HTTP against local fake providers (${testDriver})`, () => {
  it("sends the provider the app's own callback URL, and the token exchange passes its checks", async () => {
    const ada = identity("ada@github.test", "Ada");
    const outcome = await socialSignIn(github, ada);
    expect(outcome.landedOn.pathname).toBe("/dash");
    expect(github.seenRedirectUris.at(-1)).toBe(`${app.url}/api/auth/callback/github`);
    expect(github.refusals).toEqual([]);
  });

  for (const provider of [github, google]) {
    it(`${provider.kind}: creates a person on first sign-in and finds the same person by the provider account id`, async () => {
      const person = identity(`first-${provider.kind}@example.test`, "First");
      const first = await socialSignIn(provider, person);
      expect(first.landedOn.pathname).toBe("/dash");
      expect(first.user).toMatchObject({ email: person.email, name: "First" });

      // Same provider account, new email and name at the provider: still the same person.
      const again = await socialSignIn(provider, { ...person, email: `renamed-${provider.kind}@example.test`, name: "Renamed" });
      expect(again.user?.id).toBe(first.user!.id);

      const someoneElse = await socialSignIn(provider, identity(`other-${provider.kind}@example.test`, "Other"));
      expect(someoneElse.user).not.toBeNull();
      expect(someoneElse.user!.id).not.toBe(first.user!.id);
    });

    it(`${provider.kind}: a different provider account with an existing person's email is refused, not linked`, async () => {
      const owner = identity(`owner-${provider.kind}@example.test`, "Owner");
      const signedUp = await socialSignIn(provider, owner);
      expect(signedUp.user?.email).toBe(owner.email);

      const impostor = identity(owner.email, "Impostor");
      const attempt = await socialSignIn(provider, impostor);
      expect(attempt.user).toBeNull();
      expect(attempt.landedOn.pathname).toBe("/auth/sign-in");
      expect(attempt.landedOn.searchParams.get("error")).toBe("account_not_linked");

      // The rightful account still signs in, and is still the same person.
      const back = await socialSignIn(provider, owner);
      expect(back.user?.id).toBe(signedUp.user!.id);
    });

    it(`${provider.kind}: an email + password account is not taken over by a sign-in with its email`, async () => {
      const email = `password-${provider.kind}@example.test`;
      const signUp = await fetch(`${app.url}/api/auth/sign-up/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: app.url },
        body: JSON.stringify({ email, password: "correct horse battery", name: "Pass Word" }),
      });
      expect(signUp.status).toBe(200);
      const passwordUser = ((await signUp.json()) as { user: { id: string } }).user;

      const attempt = await socialSignIn(provider, identity(email, "Pass Word"));
      expect(attempt.user).toBeNull();
      expect(attempt.landedOn.searchParams.get("error")).toBe("account_not_linked");

      // The password still works and still belongs to the same person.
      const signIn = await fetch(`${app.url}/api/auth/sign-in/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: app.url },
        body: JSON.stringify({ email, password: "correct horse battery" }),
      });
      expect(signIn.status).toBe(200);
      expect(((await signIn.json()) as { user: { id: string } }).user.id).toBe(passwordUser.id);
    });
  }

  it.skipIf(testDriver !== "postgres")("keeps the provider's tokens encrypted at rest (a database read yields no GitHub token)", async () => {
    const person = identity("tokens-at-rest@github.test", "Tokens");
    const outcome = await socialSignIn(github, person);
    const rows = await database!.database.db
      .select({ accessToken: account.accessToken })
      .from(account)
      .where(eq(account.userId, outcome.user!.id));
    expect(rows).toHaveLength(1);
    // The fake provider issues tokens that start "fake_"; stored, they must be ciphertext.
    expect(rows[0]!.accessToken).toBeTruthy();
    expect(rows[0]!.accessToken).not.toMatch(/fake_/);
  });

  it("the same email at GitHub and at Google does not merge two people either", async () => {
    const email = "both@example.test";
    const viaGithub = await socialSignIn(github, identity(email, "Both"));
    expect(viaGithub.user?.email).toBe(email);
    const viaGoogle = await socialSignIn(google, identity(email, "Both"));
    expect(viaGoogle.user).toBeNull();
  });

  it("a forged callback (code the provider never issued) signs nobody in", async () => {
    const jar = new CookieJar();
    const start = await fetch(`${app.url}/api/auth/sign-in/social`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: app.url },
      body: JSON.stringify({ provider: "github", callbackURL: "/dash", errorCallbackURL: "/auth/sign-in" }),
    });
    jar.take(start);
    const state = new URL(((await start.json()) as { url: string }).url).searchParams.get("state")!;
    const refusalsBefore = github.refusals.length;
    const callback = await fetch(`${app.url}/api/auth/callback/github?code=never-issued&state=${state}`, {
      redirect: "manual",
      headers: { cookie: jar.header() },
    });
    jar.take(callback);
    expect(callback.status).toBe(302);
    expect(new URL(callback.headers.get("location")!, app.url).pathname).not.toBe("/dash");
    expect(github.refusals.slice(refusalsBefore)).toEqual(["bad_verification_code"]);
    const session = await fetch(`${app.url}/api/auth/get-session`, { headers: { cookie: jar.header() } });
    expect(await session.json()).toBeNull();
  });
});
