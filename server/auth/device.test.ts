import crypto from "node:crypto";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { signUpOverHttp } from "../testing/dash.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { MemoryOAuthClient } from "../testing/oauth-client.ts";
import { CLI_CLIENT_ID } from "./index.ts";
import { navigate } from "./testing/mcp-oauth.ts";

/**
 * The device flow and OAuth consent over HTTP against the built app (decision 037, issue 39
 * findings 5 and 6): opening a code claims nothing and the CLI is signed in as whoever approves;
 * approving (a device or an OAuth client) needs a sign-in within SIGN_IN_RECENT_SECONDS (5 s
 * here, so a test can outwait it); look-ups are limited per address and per session
 * (RATE_LIMIT_DEVICE_PER_MIN, 6 here; each part speaks from addresses of its own through
 * X-Forwarded-For, TRUST_PROXY_HOPS=1); and a visitor who is not signed in learns nothing of a code.
 */
const RECENT_SECONDS = 5;
const LIMIT = 6;
let app: AppProcess;
let database: TestDatabase | null = null;

beforeAll(async () => {
  database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  app = await startApp({
    ...(database ? { DATABASE_URL: database.url!, RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64") } : {}),
    RETASC_EMAIL_PASSWORD: "on",
    SIGN_IN_RECENT_SECONDS: String(RECENT_SECONDS),
    RATE_LIMIT_DEVICE_PER_MIN: String(LIMIT),
    RATE_LIMIT_SIGNIN_PER_MIN: "1000",
    TRUST_PROXY_HOPS: "1",
  });
});
afterAll(async () => {
  await app?.stop();
  await database?.close();
});

let addresses = 0;
/** An address of its own for the requests of one part of a test. */
const address = () => `203.0.113.${++addresses}`;

const person = async (tag: string) => {
  const email = `${tag}-${crypto.randomBytes(3).toString("hex")}@example.com`;
  return { email, ...(await signUpOverHttp(app.url, email, tag)) };
};

/**
 * The people whose sign-in must be older than the window (finding 6) sign up when the app is up,
 * so the window passes while the device flow's tests run; each of those tests then waits only
 * what is left of RECENT_SECONDS + 1 s since its person's sign-up.
 */
let stale: Promise<{ grace: Awaited<ReturnType<typeof person>>; linus: Awaited<ReturnType<typeof person>>; signedUpAt: number }>;
beforeAll(() => {
  stale = Promise.all([person("grace"), person("linus")]).then(([grace, linus]) => ({ grace, linus, signedUpAt: Date.now() }));
  stale.catch(() => {});
});
/** Waits until the sign-ups of `stale` are RECENT_SECONDS + 1 s old. */
const outwaitWindow = async (signedUpAt: number) => {
  const left = signedUpAt + (RECENT_SECONDS + 1) * 1000 - Date.now();
  if (left > 0) await new Promise((r) => setTimeout(r, left));
};

/** What `retasc login` does first: asks for a code. */
async function deviceCode() {
  const response = await fetch(`${app.url}/api/auth/device/code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ client_id: CLI_CLIENT_ID }) });
  expect(response.status).toBe(200);
  return (await response.json()) as { device_code: string; user_code: string; interval: number };
}

/**
 * The CLI's poll, until it is answered with something other than authorization_pending. Every
 * code here is decided before it is redeemed, so the first poll goes at once (a code never polled
 * has no interval to keep); a pending or slow_down answer waits the interval as the CLI does.
 */
async function redeem(code: { device_code: string; interval: number }): Promise<{ status: number; body: Record<string, string> }> {
  for (let polls = 0; ; polls++) {
    if (polls > 0) await new Promise((r) => setTimeout(r, code.interval * 1000 + 100));
    const response = await fetch(`${app.url}/api/auth/device/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code: code.device_code, client_id: CLI_CLIENT_ID }),
    });
    const body = (await response.json()) as Record<string, string>;
    if (body.error !== "authorization_pending" && body.error !== "slow_down") return { status: response.status, body };
  }
}

const openCode = (cookie: string, userCode: string, from: string) =>
  fetch(`${app.url}/device?user_code=${userCode}`, { headers: { cookie, "x-forwarded-for": from }, redirect: "manual" });
const decide = (cookie: string, userCode: string, decision: "approve" | "deny", from: string) =>
  fetch(`${app.url}/device`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": from },
    body: new URLSearchParams({ user_code: userCode, decision }),
  });
const text = async (response: Response) => (await response.text()).replaceAll("<!-- -->", "");

describe("the device flow (finding 5)", () => {
  it("opening a code claims nothing: the person who approves it is who the CLI is signed in as", async () => {
    const [alice, mallory] = await Promise.all([person("alice"), person("mallory")]);
    const code = await deviceCode();
    // Mallory merely opens the code Alice's terminal shows.
    const opened = await openCode(mallory.cookie, code.user_code, address());
    expect(opened.status).toBe(200);
    expect(await text(opened)).toContain(code.user_code);
    // Alice's Approve goes through, and the CLI is hers.
    const from = address();
    expect((await openCode(alice.cookie, code.user_code, from)).status).toBe(200);
    const approved = await decide(alice.cookie, code.user_code, "approve", from);
    expect(await text(approved)).toContain(`Approved. The CLI is signed in as ${alice.email}`);
    // Mallory's Approve afterwards changes nothing.
    expect(await text(await decide(mallory.cookie, code.user_code, "approve", address()))).toContain("This code was already approved.");
    const granted = await redeem(code);
    expect(granted.status).toBe(200);
    const who = (await (await fetch(`${app.url}/api/cli/whoami`, { headers: { authorization: `Bearer ${granted.body.access_token}` } })).json()) as { user: { email: string } };
    expect(who.user.email).toBe(alice.email);
  });

  it("of two people approving one code at once, exactly one does, and the CLI is signed in as them", async () => {
    const people = await Promise.all([person("alice"), person("mallory")]);
    const code = await deviceCode();
    const answers = await Promise.all(people.map(async (who) => text(await decide(who.cookie, code.user_code, "approve", address()))));
    const approvers = people.filter((_, i) => answers[i]!.includes("Approved. The CLI is signed in as"));
    expect(approvers, "one approval of a code, however many at once").toHaveLength(1);
    expect(answers.filter((a) => a.includes("This code was already approved."))).toHaveLength(1);
    const granted = await redeem(code);
    expect(granted.status).toBe(200);
    const who = (await (await fetch(`${app.url}/api/cli/whoami`, { headers: { authorization: `Bearer ${granted.body.access_token}` } })).json()) as { user: { email: string } };
    expect(who.user.email).toBe(approvers[0]!.email);
  });

  it("answers a visitor who is not signed in the same for a live code as for none", async () => {
    const code = await deviceCode();
    const from = address();
    const live = await fetch(`${app.url}/api/auth/device?user_code=${code.user_code}`, { headers: { "x-forwarded-for": from } });
    const none = await fetch(`${app.url}/api/auth/device?user_code=ZZZZZZZZ`, { headers: { "x-forwarded-for": from } });
    expect([live.status, await live.text()]).toEqual([none.status, await none.text()]);
    expect(live.status).toBe(404);
    const page = await fetch(`${app.url}/device?user_code=${code.user_code}`, { redirect: "manual", headers: { "x-forwarded-for": from } });
    const nothing = await fetch(`${app.url}/device?user_code=ZZZZZZZZ`, { redirect: "manual", headers: { "x-forwarded-for": from } });
    expect(page.status).toBe(302);
    expect(nothing.status).toBe(302);
    expect(page.headers.get("location")!.replace(code.user_code, "CODE")).toBe(nothing.headers.get("location")!.replace("ZZZZZZZZ", "CODE"));
    // Nor can the plugin's own approval endpoints be reached, signed in or not.
    const guest = await person("guest");
    const approve = await fetch(`${app.url}/api/auth/device/approve`, {
      method: "POST",
      headers: { cookie: guest.cookie, origin: app.url, "content-type": "application/json", "x-forwarded-for": from },
      body: JSON.stringify({ userCode: code.user_code }),
    });
    expect(approve.status).toBe(404);
    const deny = await fetch(`${app.url}/api/auth/device/deny`, {
      method: "POST",
      headers: { cookie: guest.cookie, origin: app.url, "content-type": "application/json", "x-forwarded-for": from },
      body: JSON.stringify({ userCode: code.user_code }),
    });
    expect(deny.status).toBe(404);
  });

  it("limits code look-ups and decisions per address, and per session wherever it comes from", async () => {
    const code = await deviceCode();
    // One session, a new address for every look-up: the session's limit.
    const roamer = await person("roamer");
    const bySession = [];
    for (let i = 0; i <= LIMIT; i++) bySession.push((await openCode(roamer.cookie, "ABCDEFGH", address())).status);
    expect(bySession.slice(0, LIMIT).every((s) => s === 200)).toBe(true);
    expect(bySession[LIMIT]).toBe(429);
    // One address, a new session for every look-up: the address's limit.
    const from = address();
    const byAddress = [];
    for (let i = 0; i <= LIMIT; i++) byAddress.push((await openCode((await person(`crowd${i}`)).cookie, code.user_code, from)).status);
    expect(byAddress.slice(0, LIMIT).every((s) => s === 200)).toBe(true);
    expect(byAddress[LIMIT]).toBe(429);
    const refused = await openCode(roamer.cookie, code.user_code, from);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await refused.json()) as unknown).toMatchObject({ error: { code: "RATE_LIMITED", message: "Too many device code look-ups from your address." } });
    // A decision posted names a code too: one session deciding from a new address each time.
    const decider = await person("decider");
    const decisions = [];
    for (let i = 0; i <= LIMIT; i++) decisions.push((await decide(decider.cookie, "ABCDEFGH", "approve", address())).status);
    expect(decisions.slice(0, LIMIT).every((s) => s === 200)).toBe(true);
    expect(decisions[LIMIT]).toBe(429);
  });
});

describe("approving needs a recent sign-in (finding 6)", () => {
  /** Sign in again (the /auth/sign-in form), as the page that asked sends the person to do. */
  const signInAgain = async (who: { email: string; cookie: string }, next: string) => {
    const response = await fetch(`${app.url}/auth/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: who.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ intent: "email", email: who.email, password: "correct horse battery", next }),
    });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe(next);
    return response.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  };

  it("a device approval from a sign-in older than the window is sent to sign in again, then goes through", async () => {
    const { grace, signedUpAt } = await stale;
    const code = await deviceCode();
    await outwaitWindow(signedUpAt);
    const from = address();
    const opened = await openCode(grace.cookie, code.user_code, from);
    expect(opened.status).toBe(302);
    const again = new URL(opened.headers.get("location")!, app.url);
    expect(again.pathname).toBe("/auth/sign-in");
    expect(again.searchParams.get("again")).toBe("1");
    expect(again.searchParams.get("next")).toBe(`/device?user_code=${code.user_code}`);
    const page = await text(await fetch(again, { headers: { cookie: grace.cookie } }));
    expect(page).toContain("Sign in again");
    expect(page).toContain(`You are signed in as <strong>${grace.email}</strong>, but not within the last ${RECENT_SECONDS} seconds`);
    // Approving straight away is refused the same way, and approves nothing.
    const refused = await decide(grace.cookie, code.user_code, "approve", from);
    expect(refused.status).toBe(302);
    expect(new URL(refused.headers.get("location")!, app.url).searchParams.get("next")).toBe(`/device?user_code=${code.user_code}`);
    const fresh = await signInAgain(grace, `/device?user_code=${code.user_code}`);
    expect(await text(await decide(fresh, code.user_code, "approve", from))).toContain("Approved.");
    expect((await redeem(code)).status).toBe(200);
  });

  it("so does the OAuth consent page", async () => {
    const { linus, signedUpAt } = await stale;
    const org = await fetch(`${app.url}/dash/orgs/new`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: linus.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ name: "Linus's org" }),
    });
    expect(org.status).toBe(302);
    const provider = new MemoryOAuthClient("http://127.0.0.1:7777/callback");
    expect(await auth(provider, { serverUrl: `${app.url}/mcp` })).toBe("REDIRECT");
    await outwaitWindow(signedUpAt);
    const authorize = await navigate(provider.authorizationUrl!, linus.cookie);
    const consent = new URL(authorize.location!, app.url);
    expect(consent.pathname).toBe("/oauth/consent");
    const page = await fetch(consent, { headers: { cookie: linus.cookie }, redirect: "manual" });
    expect(page.status).toBe(302);
    const again = new URL(page.headers.get("location")!, app.url);
    expect([again.pathname, again.searchParams.get("again"), again.searchParams.get("next")]).toEqual(["/auth/sign-in", "1", consent.pathname + consent.search]);
    const approve = await fetch(consent, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: linus.cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ oauth_query: consent.search.slice(1), decision: "approve", where: "" }),
    });
    expect(approve.status).toBe(302);
    expect(new URL(approve.headers.get("location")!, app.url).pathname).toBe("/auth/sign-in");
    // Signed in again, the page is shown.
    const fresh = await signInAgain(linus, consent.pathname + consent.search);
    const shown = await fetch(consent, { headers: { cookie: fresh } });
    expect(shown.status).toBe(200);
    expect(await shown.text()).toContain("Retasc Test Agent");
  });
});
