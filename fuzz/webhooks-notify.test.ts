import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { hostileString, hostileValue, noteSent, problemsWith, hostileJson } from "./hostile.ts";
import { fuzzSeeds } from "./seeds.ts";
import { startFakeDiscord, type FakeDiscord } from "../test/fakes/discord.ts";
import { startFakeSlack, type FakeSlack } from "../test/fakes/slack.ts";
import { startFakeSmtp, type FakeSmtp } from "../test/fakes/smtp.ts";
import { startFakeTelegram, type FakeTelegram } from "../test/fakes/telegram.ts";
import { startWorld, type World } from "../server/testing/world.ts";
import { notifyEnv } from "../server/testing/notify-env.ts";

/**
 * The notification doors over real HTTP against the built app: the three chat webhooks with
 * no signature, a wrong one, and a valid one over hostile bodies (so what runs after the check is
 * fuzzed too), and the Dash Notifications page and its Slack callback with hostile forms and
 * queries. Never a 5xx or a stack trace. FUZZ_NOTIFY_REQUESTS sets the volume.
 */
const REQUESTS = Number(process.env.FUZZ_NOTIFY_REQUESTS ?? 600);
const BATCH = 20;
const secret = "fuzz-telegram-secret";

let world: World;
let telegram: FakeTelegram;
let slack: FakeSlack;
let discord: FakeDiscord;
let smtp: FakeSmtp;
beforeAll(async () => {
  [telegram, slack, discord, smtp] = await Promise.all([startFakeTelegram(), startFakeSlack(), startFakeDiscord(), startFakeSmtp()]);
  world = await startWorld({
    ...notifyEnv({ telegram, slack, discord, smtp }, { telegramSecret: secret, botUsername: "fuzz_bot", from: "retasc@example.com" }),
  });
});
afterAll(async () => {
  await world?.close();
  await Promise.all([telegram?.close(), slack?.close(), discord?.close(), smtp?.close()]);
});

type Auth = "none" | "wrong" | "valid" | "stale";
interface Shot {
  path: string;
  method: "GET" | "POST";
  auth: Auth;
  body: string;
}

function shots(w: World): fc.Arbitrary<Shot> {
  const text = hostileString(w);
  const json = hostileJson(w);
  const telegramBody = fc.oneof(
    json,
    text,
    fc.record({ update_id: fc.integer(), message: fc.record({ text: text.map((t) => `/start ${t}`), chat: fc.record({ id: fc.integer(), type: fc.constantFrom("private", "group", "") }) }) }).map((u) => JSON.stringify(u)),
  );
  const slackBody = fc.oneof(
    text,
    fc.record({ text: fc.oneof(text, text.map((t) => `connect ${t}`)), team_id: text, user_id: text, command: fc.constant("/retasc") }).map((f) => new URLSearchParams(f).toString()),
  );
  const discordBody = fc.oneof(
    json,
    text,
    fc.record({ type: fc.constantFrom(1, 2, 3, 99), data: fc.record({ name: fc.constantFrom("connect", "other"), options: fc.array(fc.record({ name: fc.constantFrom("code", "x"), value: hostileValue(w) }), { maxLength: 3 }) }), user: fc.record({ id: fc.oneof(text, fc.constant("123456789")) }) }).map((i) => JSON.stringify(i)),
  );
  const auth = fc.constantFrom<Auth>("none", "wrong", "valid", "valid", "stale");
  const form = fc.array(fc.tuple(fc.constantFrom("intent", "channel", "email", "code", "kind", "x"), fc.oneof(fc.constantFrom("connect", "email-start", "email-confirm", "disconnect", "mute", "unmute", "test", "install-slack", "telegram", "slack", "discord", "email", "done", "review"), text)), { maxLength: 5 }).map((f) => new URLSearchParams(f.map(([k, v]) => [k, v.slice(0, 400)])).toString());
  return fc.oneof(
    fc.record({ path: fc.constant("/webhooks/telegram"), method: fc.constant("POST" as const), auth, body: telegramBody }),
    fc.record({ path: fc.constant("/webhooks/slack"), method: fc.constant("POST" as const), auth, body: slackBody }),
    fc.record({ path: fc.constant("/webhooks/discord"), method: fc.constant("POST" as const), auth, body: discordBody }),
    fc.record({ path: fc.constant("/dash/settings/notifications"), method: fc.constantFrom("GET" as const, "POST" as const), auth: fc.constant<Auth>("valid"), body: form }),
    fc.record({ path: fc.constant("/dash/settings/notifications/slack"), method: fc.constant("GET" as const), auth: fc.constant<Auth>("valid"), body: fc.record({ code: text, state: text, error: fc.oneof(fc.constant(""), text) }).map((q) => new URLSearchParams(q).toString()) }),
  );
}

function headersFor(shot: Shot): Record<string, string> {
  const now = Math.floor(Date.now() / 1000);
  const stale = shot.auth === "stale" ? now - 3_600 : now;
  if (shot.path.startsWith("/dash")) return { cookie: world.a.cookie, origin: world.url, "content-type": "application/x-www-form-urlencoded" };
  if (shot.path === "/webhooks/telegram") {
    const token = shot.auth === "valid" ? secret : shot.auth === "none" ? null : "wrong";
    return { "content-type": "application/json", ...(token ? { "x-telegram-bot-api-secret-token": token } : {}) };
  }
  if (shot.path === "/webhooks/slack") {
    if (shot.auth === "none") return { "content-type": "application/x-www-form-urlencoded" };
    return slack.signatureHeaders(shot.body, { timestamp: stale, ...(shot.auth === "wrong" ? { secret: "wrong" } : {}) });
  }
  if (shot.auth === "none") return { "content-type": "application/json" };
  return discord.signatureHeaders(shot.body, { timestamp: stale, forge: shot.auth === "wrong" });
}

test(`the notification webhooks and page survive ${REQUESTS} hostile requests: no 5xx, no stack trace; unsigned ones are refused`, async () => {
  const problems: string[] = [];
  for (const seed of fuzzSeeds("webhooks-notify")) {
    const samples = fc.sample(shots(world), { numRuns: REQUESTS, seed });
    for (let i = 0; i < samples.length; i += BATCH) {
      const batch = samples.slice(i, i + BATCH);
      // A form in this batch may store one of B's ids as A's own text (an email address A typed)
      // that a page in the same batch shows back; note every request before any is answered.
      for (const shot of batch) noteSent(world, shot.body);
      await Promise.all(
        batch.map(async (shot) => {
          const url = shot.method === "GET" && shot.body ? `${world.url}${shot.path}?${shot.body}` : `${world.url}${shot.path}`;
          const response = await fetch(url, { method: shot.method, headers: headersFor(shot), body: shot.method === "POST" ? shot.body : undefined, redirect: "manual" });
          const text = await response.text();
          const sent = `${shot.method} ${shot.path} ${shot.auth} ${shot.body.slice(0, 300)}`;
          problems.push(...problemsWith(world, { status: response.status, body: text }, sent).map((p) => `${p} for ${sent}: ${text.slice(0, 200)}`));
          if (shot.path.startsWith("/webhooks/") && shot.auth !== "valid" && response.status !== 401 && response.status !== 413) problems.push(`${shot.auth} signature answered ${response.status} for ${sent}`);
        }),
      );
    }
    // Each problem names its single request; the seed names the run that found it.
    expect(problems.slice(0, 20), `seed ${seed}`).toEqual([]);
  }
}, 480_000);
