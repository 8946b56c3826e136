import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { createTestDatabase, servicesFor, testConfig, type TestDatabase } from "../testing/db.ts";
import { createAuth } from "./index.ts";

/**
 * Which origins the app trusts with a session, and where it lets a request send the browser,
 * over real HTTP against the built app in the embedded mode.
 */
const evil = "https://evil.example";
const running: AppProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((app) => app.stop()));
});

async function start(env: Record<string, string> = {}) {
  const app = await startApp(env);
  running.push(app);
  return app;
}

const cookieOf = (response: Response) =>
  response.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");

async function signUp(app: AppProcess, email: string, origin = app.url): Promise<string> {
  const response = await fetch(`${app.url}/api/auth/sign-up/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin },
    body: JSON.stringify({ email, password: "correct horse battery", name: "Ada" }),
  });
  expect(response.status).toBe(200);
  return cookieOf(response);
}

async function nameOf(app: AppProcess, cookie: string): Promise<string> {
  const session = (await (await fetch(`${app.url}/api/auth/get-session`, { headers: { cookie } })).json()) as { user: { name: string } };
  return session.user.name;
}

/** A form post the way a browser sends one from `origin`; the redirect is returned, not followed. */
function postForm(app: AppProcess, path: string, fields: Record<string, string>, cookie: string, origin = app.url) {
  return fetch(`${app.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin, cookie },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });
}

describe("embedded mode without PUBLIC_URL", () => {
  let app: AppProcess;
  let cookie: string;
  beforeAll(async () => {
    app = await start();
    cookie = await signUp(app, "origins@example.com");
  });

  it("refuses a cookie-authenticated change from another site, and takes it from the loopback names", async () => {
    const update = (origin: string, name: string) =>
      fetch(`${app.url}/api/auth/update-user`, {
        method: "POST",
        headers: { "content-type": "application/json", origin, cookie },
        body: JSON.stringify({ name }),
      });
    expect((await update(evil, "Mallory")).status).toBe(403);
    expect((await update(`http://127.0.0.1:${app.port + 1}`, "Other port")).status).toBe(403);
    expect(await nameOf(app, cookie)).toBe("Ada");
    expect((await update(`http://localhost:${app.port}`, "Ada L")).status).toBe(200);
    expect(await nameOf(app, cookie)).toBe("Ada L");
  });

  it("sends no one to another site through a callbackURL", async () => {
    const reset = (callbackURL: string) =>
      fetch(`${app.url}/api/auth/reset-password/not-a-token?callbackURL=${encodeURIComponent(callbackURL)}`, { redirect: "manual" });
    const away = await reset(`${evil}/phish`);
    expect(away.status).toBe(403);
    expect(away.headers.get("location")).toBeNull();
    const home = await reset("/auth/sign-in");
    expect(home.status).toBe(302);
    expect(home.headers.get("location")).toBe(`${app.url}/auth/sign-in?error=INVALID_TOKEN`);

    const social = await fetch(`${app.url}/api/auth/sign-in/social`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: app.url },
      body: JSON.stringify({ provider: "github", callbackURL: `${evil}/x` }),
    });
    expect(social.status).toBe(403);
  });

  it("sends a signed-in person back only to a path on this site, from sign-in and from switching orgs", async () => {
    const offSite = ["/\t/127.0.0.1:9999/x", "/\\evil.example", "/.//evil.example", "//evil.example"];
    for (const next of offSite) {
      const page = await fetch(`${app.url}/auth/sign-in?next=${encodeURIComponent(next)}`, { headers: { cookie }, redirect: "manual" });
      expect(page.status).toBe(302);
      expect(page.headers.get("location")).toBe("/dash");
    }
    const kept = await fetch(`${app.url}/auth/sign-in?next=${encodeURIComponent("/device?user_code=AB")}`, { headers: { cookie }, redirect: "manual" });
    expect(kept.headers.get("location")).toBe("/device?user_code=AB");

    const signIn = await postForm(app, "/auth/sign-in", { email: "origins@example.com", password: "correct horse battery", next: offSite[0]! }, "");
    expect(signIn.status).toBe(302);
    expect(signIn.headers.get("location")).toBe("/dash");

    const created = await postForm(app, "/dash/orgs/new", { name: "Origins" }, cookie);
    expect(created.status).toBe(302);
    const orgCookie = created.headers.getSetCookie().find((c) => c.startsWith("retasc_org="))!.split(";")[0]!;
    const orgId = JSON.parse(Buffer.from(decodeURIComponent(orgCookie.split("=")[1]!), "base64").toString()) as string;
    for (const next of offSite) {
      const switched = await postForm(app, "/dash/switch-org", { orgId, next }, cookie);
      expect(switched.status).toBe(302);
      expect(switched.headers.get("location")).toBe("/dash");
    }
    const back = await postForm(app, "/dash/switch-org", { orgId, next: "/dash/settings/keys" }, cookie);
    expect(back.headers.get("location")).toBe("/dash/settings/keys");
  });
});

describe("with PUBLIC_URL under a path", () => {
  it("trusts that origin, and writes the path into the URLs it hands out", async () => {
    const publicUrl = "https://retasc.example/base";
    const app = await start({ PUBLIC_URL: `${publicUrl}/` });
    // As the proxy in front forwards it: the path stripped, the public origin in Origin.
    const cookie = await signUp(app, "public@example.com", "https://retasc.example");
    expect(cookie).toContain("better-auth.session_token=");
    const refused = await fetch(`${app.url}/api/auth/sign-up/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: evil },
      body: JSON.stringify({ email: "mallory@example.com", password: "correct horse battery", name: "M" }),
    });
    expect(refused.status).toBe(403);

    const code = (await (
      await fetch(`${app.url}/api/auth/device/code`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: "https://retasc.example" },
        body: JSON.stringify({ client_id: "retasc-cli" }),
      })
    ).json()) as { verification_uri: string };
    expect(code.verification_uri).toBe(`${publicUrl}/device`);
  });
});

describe("better-auth's own checks, whatever the edge in front does", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb?.close();
  });

  it.each([
    ["without PUBLIC_URL", {}, "http://localhost:3000"],
    ["with PUBLIC_URL", { PUBLIC_URL: "https://retasc.example/base" }, "https://retasc.example"],
  ])("%s trusts only the configured origins", async (_, env: Record<string, string>, own) => {
    const auth = createAuth(servicesFor(tdb.database, { config: testConfig(env) }));
    const base = env.PUBLIC_URL ?? own;
    const email = `${crypto.randomUUID()}@example.com`;
    const signUp = (origin: string) =>
      auth.handler(
        new Request(`${base}/api/auth/sign-up/email`, {
          method: "POST",
          headers: { "content-type": "application/json", origin },
          body: JSON.stringify({ email, password: "correct horse battery", name: "Ada" }),
        }),
      );
    expect((await signUp(evil)).status).toBe(403);
    const signedUp = await signUp(own);
    expect(signedUp.status).toBe(200);
    const update = (origin: string) =>
      auth.handler(
        new Request(`${base}/api/auth/update-user`, {
          method: "POST",
          headers: { "content-type": "application/json", origin, cookie: cookieOf(signedUp) },
          body: JSON.stringify({ name: "Mallory" }),
        }),
      );
    expect((await update(evil)).status).toBe(403);
    expect((await update(own)).status).toBe(200);
    const reset = await auth.handler(new Request(`${base}/api/auth/reset-password/x?callbackURL=${encodeURIComponent(evil)}`));
    expect(reset.status).toBe(403);
    expect(reset.headers.get("location")).toBeNull();
  });
});
