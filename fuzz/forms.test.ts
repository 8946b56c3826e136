import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { hostileString, noteSent, problemsWith } from "./hostile.ts";
import { fuzzSeeds, isolateFailure } from "./seeds.ts";
import { startWorld, type World } from "../server/testing/world.ts";

/**
 * Property-based fuzzing of every form and JSON endpoint besides /mcp, over real HTTP against
 * the built app: the Dash's loaders and form actions (signed in as tenant A, and signed out),
 * sign-in, sign-up, device approval and invite pages, better-auth's endpoints and the CLI's
 * /api/cli/*, and Stripe's webhook (billing on, with keys that reach no Stripe). Hostile fields in
 * every encoding; never a 5xx, a stack trace, or B's data.
 * FUZZ_FORM_REQUESTS sets the volume.
 */
const REQUESTS = Number(process.env.FUZZ_FORM_REQUESTS ?? 3_000);
const BATCH = 25;

let world: World;
beforeAll(async () => {
  world = await startWorld({
    // BATCH requests go at once as one person; a caller's share of the heavy reads (decision 061)
    // would answer most of its Dash pages 429 before they reach the code under test.
    HEAVY_READS_PER_CALLER: "64",
    RATE_LIMIT_SIGNIN_PER_MIN: "100000000",
    RATE_LIMIT_AUTH_FAILURES_PER_MIN: "100000000",
    RETASC_BILLING: "on",
    STRIPE_SECRET_KEY: "sk_test_fuzz",
    STRIPE_WEBHOOK_SECRET: "whsec_fuzz",
    STRIPE_API_URL: "http://127.0.0.1:9",
  });
});
afterAll(async () => {
  await world?.close();
});

const FIELDS = [
  "intent", "title", "body", "email", "password", "name", "prefix", "memberId", "keyId", "inviteId", "projectId",
  "orgId", "identifier", "status", "priority", "assignee", "dueAt", "labels", "blockedBy", "dependency", "noDependency",
  "work", "parent", "runtime", "expiresDays", "decision", "user_code", "userCode", "code", "next", "cancelReason", "note",
  "target", "type", "claimToken", "comment", "project", "startBlocked", "was.title", "was.status", "action", "role", "callbackURL", "monthlyUsd",
  "oauth_query", "where", "projectIds",
];
const INTENTS = [
  "edit", "comment", "release", "cancel", "relate", "unrelate", "reprioritize", "invite", "revoke-invite", "suspend", "reactivate",
  "retire", "make-admin", "make-member", "make-owner", "mint", "rotate", "revoke", "setup", "email", "github", "google", "approve", "deny", "cap", "cap-off", "scope",
];

interface Shot {
  method: "GET" | "POST";
  path: string;
  encoding: "form" | "multipart" | "json" | "text" | "none";
  fields: [string, string][];
  session: "cookie" | "bearer" | "none";
  origin: "same" | "foreign" | "none";
}

function shots(w: World): fc.Arbitrary<Shot> {
  const text = hostileString(w);
  const identifier = fc.oneof(fc.constantFrom(`${w.a.prefix}-1`, `${w.a.prefix}-2`, ...w.bIds.issues), text);
  const pathSegment = text.map((s) => encodeURIComponent(s.slice(0, 300)));
  // Document requests and React Router's data requests (`.data`) reach the same loaders and actions.
  const dataOrNot = fc.constantFrom("", ".data");
  const path = fc.oneof(
    fc.constantFrom("/dash", "/dash/queue", "/dash/issues/new", "/dash/orgs/new", "/dash/switch-org", "/dash/settings/projects", "/dash/settings/members", "/dash/settings/keys", "/dash/settings/billing", "/auth/sign-in", "/auth/sign-up", "/device", "/oauth/consent").chain((p) => dataOrNot.map((d) => p + d)),
    // The live stream, and its `.data` twin (answered 404 by main.ts: React Router would wait for the stream's end).
    fc.constantFrom("/dash/events", "/dash/events.data"),
    fc.tuple(identifier.map((s) => encodeURIComponent(s.slice(0, 300))), dataOrNot).map(([id, d]) => `/dash/issues/${id}${d}`),
    fc.tuple(pathSegment, dataOrNot).map(([code, d]) => `/join/${code}${d}`),
    fc.constantFrom("whoami", "orgs", "projects", "keys", "members", "join", "setup", "sign-in-methods", "billing").map((p) => `/api/cli/${p}`),
    fc.constantFrom("/webhooks/stripe"),
    fc.constantFrom("sign-in/email", "sign-up/email", "get-session", "device/code", "device/token", "device/approve", "sign-out", "nope", "oauth2/register", "oauth2/authorize", "oauth2/token", "oauth2/revoke", "oauth2/consent").map((p) => `/api/auth/${p}`),
  );
  const query = fc.array(fc.tuple(fc.constantFrom("status", "runtime", "priority", "from", "to", "page", "orgId", "q", "user_code", "error", "next", "includeRevoked"), text), { maxLength: 4 });
  return fc
    .record({
      method: fc.constantFrom("GET", "POST", "POST", "POST"),
      path,
      query,
      encoding: fc.constantFrom("form", "form", "multipart", "json", "json", "text", "none"),
      fields: fc.array(
        fc.tuple(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...FIELDS) }, { weight: 1, arbitrary: fc.string() }), fc.oneof({ weight: 1, arbitrary: fc.constantFrom(...INTENTS) }, { weight: 4, arbitrary: text })),
        { maxLength: 8 },
      ),
      session: fc.constantFrom("cookie", "cookie", "cookie", "bearer", "none"),
      origin: fc.constantFrom("same", "same", "same", "foreign", "none"),
    })
    .map(({ query, ...shot }) => {
      const search = new URLSearchParams(query.map(([k, v]) => [k, v.slice(0, 500)])).toString();
      return { ...shot, path: search && shot.method === "GET" ? `${shot.path}?${search}` : shot.path } as Shot;
    })
    // Signing A out would end the session the other requests ride on.
    .filter((shot) => !(shot.session !== "none" && /sign-out/.test(shot.path)));
}

let sent = 0;
async function fire(shot: Shot): Promise<string[]> {
  const headers: Record<string, string> = {};
  if (shot.session === "cookie") headers.cookie = world.a.cookie;
  if (shot.session === "bearer") headers.authorization = `Bearer ${world.a.token}`;
  if (shot.origin === "same") headers.origin = world.url;
  if (shot.origin === "foreign") headers.origin = "https://evil.example";
  let body: BodyInit | undefined;
  if (shot.method === "POST") {
    if (shot.encoding === "form") body = new URLSearchParams(shot.fields);
    if (shot.encoding === "multipart") {
      const form = new FormData();
      for (const [k, v] of shot.fields) form.append(k, v);
      body = form;
    }
    if (shot.encoding === "json") {
      body = JSON.stringify(Object.fromEntries(shot.fields));
      headers["content-type"] = "application/json";
    }
    if (shot.encoding === "text") {
      body = shot.fields.map(([k, v]) => `${k}${v}`).join("&");
      headers["content-type"] = "text/plain";
    }
  }
  const controller = new AbortController();
  const request = `${shot.method} ${shot.path} ${JSON.stringify(shot.fields)}`;
  noteSent(world, request);
  const timer = setTimeout(() => controller.abort(), 20_000);
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${world.url}${shot.path}`, { method: shot.method, headers, body, redirect: "manual", signal: controller.signal });
    // The live stream never ends by itself: its first bytes are enough.
    text = response.headers.get("content-type")?.startsWith("text/event-stream") ? await firstChunk(response, controller) : await response.text();
  } catch (error) {
    return [`no reply within 20 s (${String(error).slice(0, 100)}) for ${request.slice(0, 400)}`];
  } finally {
    clearTimeout(timer);
  }
  sent++;
  return problemsWith(world, { status: response.status, body: text }, request).map((p) => `${p} for ${request.slice(0, 400)}: ${text.slice(0, 300)}`);
}

async function firstChunk(response: Response, controller: AbortController): Promise<string> {
  const reader = response.body!.getReader();
  const { value } = await reader.read();
  controller.abort();
  return new TextDecoder().decode(value ?? new Uint8Array());
}

test(`every form and JSON endpoint survives ${REQUESTS} hostile requests: no 5xx, no stack trace, nothing of the other tenant`, async () => {
  for (const seed of fuzzSeeds("forms")) {
    const startedAt = Date.now();
    const before = sent;
    await fc.assert(
      fc.asyncProperty(fc.array(shots(world), { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const problems = await Promise.all(batch.map(fire));
        const failing = batch.map((shot, i) => ({ shot, problems: problems[i]! })).filter((f) => f.problems.length > 0);
        if (failing.length > 0) expect.fail(await isolateFailure(seed, failing, fire));
      }),
      // The failure names its seed and request; shrinking batches of HTTP calls would take too long.
      { numRuns: Math.ceil(REQUESTS / BATCH), seed, endOnFailure: true },
    );
    const seconds = (Date.now() - startedAt) / 1000;
    process.stderr.write(`form fuzz (seed ${seed}): ${sent - before} requests in ${seconds.toFixed(1)} s (${Math.round((sent - before) / seconds)}/s)\n`);
    expect(sent - before).toBeGreaterThanOrEqual(REQUESTS);
  }
  expect((await fetch(`${world.url}/healthz`)).status).toBe(200);
  // A is still signed in (nothing the fuzz sent ended the session).
  expect((await fetch(`${world.url}/api/cli/whoami`, { headers: { authorization: `Bearer ${world.a.token}` } })).status).toBe(200);
}, 900_000);

test("values the database cannot take (a NUL in a filter, a malformed id) are a 400, not a 500", async () => {
  for (const path of ["/dash/queue?runtime=%00", "/dash/queue.data?runtime=a%00b"]) {
    const response = await fetch(`${world.url}${path}`, { headers: { cookie: world.a.cookie } });
    expect(response.status, path).toBe(400);
    expect(await response.text()).toMatch(/INVALID_INPUT/);
  }
});
