import crypto from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { notifyBindings, notifyDeliveries } from "../../db/schema/index.ts";
import type { Ctx, Services } from "../../server/context.ts";
import { Keyring } from "../../server/crypto/index.ts";
import { saveIssue } from "../../server/issues/index.ts";
import { createLogger } from "../../server/log.ts";
import { confirmEmail, disconnect, notificationSettings, sendTest, setMute, startConnect, startEmail } from "../../server/notify/bindings.ts";
import { receiveDiscordInteraction } from "../../server/notify/discord.ts";
import { completeSlackInstall, receiveSlackCommand, slackInstallUrl } from "../../server/notify/slack.ts";
import { receiveTelegramUpdate } from "../../server/notify/telegram-webhook.ts";
import { refusal, peopleOf, type Person } from "../../server/orgs/testing.ts";
import { checkpoint, claimIssue, reclaimSweep } from "../../server/queue/index.ts";
import { createTestDatabase, servicesFor, testConfig, testDriver, TestClock, type TestDatabase } from "../../server/testing/db.ts";
import { startFakeDiscord, type FakeDiscord } from "../../test/fakes/discord.ts";
import { startFakeSlack, type FakeSlack } from "../../test/fakes/slack.ts";
import { startFakeSmtp, type FakeSmtp } from "../../test/fakes/smtp.ts";
import { startFakeTelegram, type FakeTelegram } from "../../test/fakes/telegram.ts";
import { seedOrg, type SeededOrg } from "../../server/testing/fixtures.ts";
import { retascJobs } from "../catalog.ts";
import { startInlineRunner } from "../inline.ts";
import type { JobRunner } from "../runner.ts";
import { spawnWorker } from "../testing/spawn.ts";
import { sleep, waitFor } from "../../server/testing/wait.ts";
import { notifyEnv } from "../../server/testing/notify-env.ts";

/**
 * Notifications end to end through the outbox: people bind Telegram (the signed webhook) and
 * email (the 6-digit code) the way they would, issues move through the service core, the
 * in-process runner delivers, and the local fake Telegram and SMTP server say what reached whom.
 */
const log = createLogger("silent");
const secret = "telegram-webhook-secret-for-tests";
const masterKey = crypto.randomBytes(32);
let tdb: TestDatabase;
let services: Services;
let telegram: FakeTelegram;
let smtp: FakeSmtp;
let slack: FakeSlack;
let discord: FakeDiscord;
let runner: JobRunner | null = null;
let org: SeededOrg;
let as: Record<Person, Ctx>;
const clock = new TestClock(Date.now());
const chats = { alice: 7001, bob: 7002, carol: 7003 } as const;
const slackUsers = { alice: "UALICE", bob: "UBOB", carol: "UCAROL" } as const;
const discordUsers = { alice: "9001", bob: "9002", carol: "9003" } as const;
const emails = {} as Record<Person, string>;
let bobEmail: string;

const env = () => ({
  ...notifyEnv({ telegram, slack, discord, smtp }, { telegramSecret: secret, botUsername: "retasc_test_bot" }),
  PUBLIC_URL: "https://retasc.example.com",
  JOB_BACKOFF_MS: "100",
  OUTBOX_POLL_MS: "200",
});

const startRunner = async () => {
  runner = await startInlineRunner({ services, database: tdb.database, log, catalog: retascJobs, sweeps: [], exclusive: false });
};
const stopRunner = async () => {
  await runner?.stop();
  runner = null;
};

beforeAll(async () => {
  [telegram, smtp, slack, discord, tdb] = await Promise.all([startFakeTelegram(), startFakeSmtp(), startFakeSlack(), startFakeDiscord(), createTestDatabase()]);
  services = servicesFor(tdb.database, { config: testConfig(env()), keyring: new Keyring(masterKey), clock });
  org = await seedOrg(services, { prefix: "NTF" });
  as = (await peopleOf(services, org)).as;
  for (const who of ["alice", "bob", "carol"] as const) {
    const [row] = await query<{ email: string }>(services.db, sql`select email from "user" where id = ${org.agents[who].userId}`);
    emails[who] = row!.email;
  }
  bobEmail = emails.bob;
  await startRunner();
});
afterAll(async () => {
  await stopRunner();
  expect(slack.problems).toEqual([]);
  expect(discord.problems).toEqual([]);
  await Promise.all([telegram?.close(), smtp?.close(), slack?.close(), discord?.close(), tdb?.close()]);
});

const connectTelegram = async (who: Person) => {
  const { link } = await startConnect(as[who], { channel: "telegram" });
  const code = new URL(link!).searchParams.get("start")!;
  const update = JSON.stringify(telegram.update(chats[who], `/start ${code}`, who));
  return { code, reply: await receiveTelegramUpdate(services, log, update, secret) };
};

const deliveriesTo = (userId: string) =>
  services.db.select().from(notifyDeliveries).where(and(eq(notifyDeliveries.orgId, org.orgId), eq(notifyDeliveries.userId, userId)));

const textsTo = (chat: number) => telegram.messagesTo(chat).map((c) => String(c.body.text));

/** What `who` received about `identifier` on each channel. */
const heard = (who: Person, identifier: string) => ({
  telegram: textsTo(chats[who]).filter((t) => t.includes(identifier)),
  email: smtp.mailsTo(emails[who]).filter((m) => m.subject.includes(identifier)).map((m) => m.text),
  slack: slack.messagesTo(slackUsers[who]).map((m) => m.text).filter((t) => t.includes(identifier)),
  discord: discord.messagesTo(discordUsers[who]).map((m) => m.content).filter((t) => t.includes(identifier)),
});

/** Waits until `who` has heard of `identifier` on all four channels; each channel's one message. */
const heardEverywhere = async (who: Person, identifier: string) => {
  await waitFor(async () => Object.values(heard(who, identifier)).every((list) => list.length > 0), 10_000, `${who} hears of ${identifier} on every channel`);
  const got = heard(who, identifier);
  for (const list of Object.values(got)) expect(list).toHaveLength(1);
  return { telegram: got.telegram[0]!, email: got.email[0]!, slack: got.slack[0]!, discord: got.discord[0]! };
};

const heardNothing = (who: Person, identifier: string) => expect(heard(who, identifier)).toEqual({ telegram: [], email: [], slack: [], discord: [] });

/** The other people than the one told: after the events settle, none heard anything. */
const settled = () =>
  waitFor(
    async () => (await query<{ n: number }>(services.db, sql`select count(*)::int as n from outbox where job like 'notify.%' and completed_at is null and failed_at is null`))[0]!.n === 0,
    10_000,
    "every notification job settled",
  );

describe("binding", () => {
  it("binds a Telegram chat with /start <code> under the secret header; a forged header or a used code binds nothing", async () => {
    const { link } = await startConnect(as.alice, { channel: "telegram" });
    expect(link).toMatch(/^https:\/\/t\.me\/retasc_test_bot\?start=[A-Za-z0-9_-]{24}$/);
    const code = new URL(link!).searchParams.get("start")!;
    const body = JSON.stringify(telegram.update(chats.alice, `/start ${code}`, "alice"));
    expect((await receiveTelegramUpdate(services, log, body, "wrong-secret")).status).toBe(401);
    expect((await receiveTelegramUpdate(services, log, body, null)).status).toBe(401);
    expect((await receiveTelegramUpdate(services, log, "{not json", secret)).status).toBe(400);
    expect(await receiveTelegramUpdate(services, log, body, secret)).toEqual({ status: 200, body: { ok: true, connected: true } });
    // Redelivered: acknowledged, not acted on; the same code in a new update is spent.
    expect(await receiveTelegramUpdate(services, log, body, secret)).toEqual({ status: 200, body: { ok: true, duplicate: true } });
    const again = JSON.stringify(telegram.update(chats.alice, `/start ${code}`, "alice"));
    expect(await receiveTelegramUpdate(services, log, again, secret)).toEqual({ status: 200, body: { ok: true, connected: false } });
    expect(textsTo(chats.alice).at(-1)).toMatch(/expired or was already used/);
    for (const who of ["bob", "carol"] as const) expect((await connectTelegram(who)).reply.body).toMatchObject({ connected: true });
    const settings = await notificationSettings(as.alice);
    expect(settings.channels.find((c) => c.channel === "telegram")).toMatchObject({ status: "active", label: "@alice", brokenReason: null });
  });

  it("an expired Telegram code binds nothing", async () => {
    const { link } = await startConnect(as.bob, { channel: "telegram" });
    clock.advance(16 * 60_000);
    const body = JSON.stringify(telegram.update(9999, `/start ${new URL(link!).searchParams.get("start")}`));
    expect((await receiveTelegramUpdate(services, log, body, secret)).body).toMatchObject({ connected: false });
  });

  it("binds an email address once its 6-digit code comes back; a wrong code is refused", async () => {
    for (const who of ["alice", "bob", "carol"] as const) {
      await startEmail(as[who], { email: emails[who] });
      const mail = smtp.mailsTo(emails[who]).at(-1)!;
      const code = mail.subject.match(/(\d{6})/)![1]!;
      expect((await notificationSettings(as[who])).channels.find((c) => c.channel === "email")).toMatchObject({ status: "pending" });
      const wrong = code === "000000" ? "111111" : "000000";
      expect((await refusal(confirmEmail(as[who], { code: wrong }))).code).toBe("INVALID_INPUT");
      expect(await confirmEmail(as[who], { code })).toEqual({ confirmed: true });
      expect((await notificationSettings(as[who])).channels.find((c) => c.channel === "email")).toMatchObject({ status: "active", label: emails[who] });
    }
  });

  it("Slack: an admin installs the app (OAuth v2, the bot token kept encrypted), then /retasc connect <code> binds; stale, forged, tampered or replayed commands are refused", async () => {
    const base = "https://retasc.example.com";
    expect((await refusal(startConnect(as.alice, { channel: "slack" }))).code).toBe("UNAVAILABLE");
    expect((await refusal(slackInstallUrl(as.bob, base))).code).toBe("FORBIDDEN");
    const install = new URL(await slackInstallUrl(as.alice, base));
    expect(install.searchParams.get("scope")).toBe("chat:write,commands");
    const redirect = install.searchParams.get("redirect_uri")!;
    expect(redirect).toBe("https://retasc.example.com/dash/settings/notifications/slack");
    const state = install.searchParams.get("state")!;
    expect((await refusal(completeSlackInstall(as.alice, { code: slack.issueCode(redirect), state: `${state}x`, baseUrl: base }))).code).toBe("INVALID_INPUT");
    expect(await completeSlackInstall(as.alice, { code: slack.issueCode(redirect), state, baseUrl: base })).toEqual({ teamId: slack.teamId });
    const [stored] = await query<{ bot_token_enc: string }>(services.db, sql`select bot_token_enc from notify_slack_installs where org_id = ${org.orgId}`);
    expect(stored!.bot_token_enc).not.toContain(slack.botToken);

    const now = Math.floor(clock.now().getTime() / 1000);
    for (const who of ["alice", "bob", "carol"] as const) {
      const { code } = await startConnect(as[who], { channel: "slack" });
      const stale = slack.slashCommand(slackUsers[who], `connect ${code}`, { timestamp: now - 301 });
      expect((await receiveSlackCommand(services, log, stale.body, new Headers(stale.headers))).status).toBe(401);
      const forged = slack.slashCommand(slackUsers[who], `connect ${code}`, { timestamp: now, secret: "not-the-secret" });
      expect((await receiveSlackCommand(services, log, forged.body, new Headers(forged.headers))).status).toBe(401);
      const good = slack.slashCommand(slackUsers[who], `connect ${code}`, { timestamp: now });
      const tampered = { ...good, body: good.body.replace(slackUsers[who], "UEVIL") };
      expect((await receiveSlackCommand(services, log, tampered.body, new Headers(tampered.headers))).status).toBe(401);
      expect(await receiveSlackCommand(services, log, good.body, new Headers(good.headers))).toEqual({ status: 200, body: { response_type: "ephemeral", text: expect.stringContaining("Connected") } });
      // The same signed request again is a replay; a new one with the spent code binds nothing.
      expect((await receiveSlackCommand(services, log, good.body, new Headers(good.headers))).status).toBe(401);
      const later = slack.slashCommand(slackUsers[who], ` connect  ${code}`, { timestamp: now });
      expect((await receiveSlackCommand(services, log, later.body, new Headers(later.headers))).body).toMatchObject({ text: expect.stringContaining("expired or was already used") });
    }
    expect((await notificationSettings(as.bob)).channels.find((c) => c.channel === "slack")).toMatchObject({ status: "active", label: `Slack user ${slackUsers.bob}` });
  });

  it("Discord: /connect <code> signed with the application's Ed25519 key binds the DM channel; a forged, stale or replayed interaction is refused", async () => {
    const now = Math.floor(clock.now().getTime() / 1000);
    const ping = discord.interaction({ type: 1 }, { timestamp: now });
    expect(await receiveDiscordInteraction(services, log, ping.body, new Headers(ping.headers))).toEqual({ status: 200, body: { type: 1 } });
    for (const who of ["alice", "bob", "carol"] as const) {
      const { code } = await startConnect(as[who], { channel: "discord" });
      const command = discord.connectCommand(discordUsers[who], code);
      const forged = discord.interaction(command, { timestamp: now, forge: true });
      expect((await receiveDiscordInteraction(services, log, forged.body, new Headers(forged.headers))).status).toBe(401);
      const stale = discord.interaction(command, { timestamp: now - 600 });
      expect((await receiveDiscordInteraction(services, log, stale.body, new Headers(stale.headers))).status).toBe(401);
      const good = discord.interaction(command, { timestamp: now });
      expect((await receiveDiscordInteraction(services, log, good.body.replace(code, `${code}x`), new Headers(good.headers))).status).toBe(401);
      expect(await receiveDiscordInteraction(services, log, good.body, new Headers(good.headers))).toEqual({
        status: 200,
        body: { type: 4, data: { content: expect.stringContaining("Connected"), flags: 64 } },
      });
      expect((await receiveDiscordInteraction(services, log, good.body, new Headers(good.headers))).status).toBe(401);
    }
    expect((await notificationSettings(as.carol)).channels.find((c) => c.channel === "discord")).toMatchObject({ status: "active" });
  });
});

describe("who hears what, on every channel", () => {
  it("done → the author, not the actor; escaped for each platform, linked to the Dash", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Fix <b>login</b> & @channel *now*", work: true, changeType: "feat", noDependency: "none" });
    const claim = await claimIssue(org.agents.bob.ctx, { identifier: issue.identifier });
    await saveIssue(org.agents.bob.ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    const got = await heardEverywhere("alice", issue.identifier);
    const url = `https://retasc.example.com/dash/issues/${issue.identifier}`;
    expect(got.telegram).toContain(`<b>${issue.identifier} · Fix &lt;b&gt;login&lt;/b&gt; &amp; @channel *now*</b> was marked done.`);
    expect(got.telegram).toContain(`<a href="${url}">`);
    expect(got.slack).toContain(`*${issue.identifier} · Fix &lt;b&gt;login&lt;/b&gt; &amp; @channel *now** was marked done.`);
    expect(got.slack).toContain(`<${url}|Open in Retasc>`);
    expect(got.discord).toContain(`**${issue.identifier} · Fix \\<b\\>login\\</b\\> & \\@channel \\*now\\*** was marked done.`);
    expect(got.discord).toContain(`<${url}>`);
    expect(got.email).toContain(`${issue.identifier} · Fix <b>login</b> & @channel *now* was marked done.`);
    expect(got.email).toContain(url);
    await settled();
    heardNothing("bob", issue.identifier);
    heardNothing("carol", issue.identifier);
  });

  it("a person is never told of their own action", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Own work", work: true, changeType: "feat", noDependency: "none" });
    const claim = await claimIssue(org.agents.alice.ctx, { identifier: issue.identifier });
    await saveIssue(org.agents.alice.ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    await settled();
    for (const who of ["alice", "bob", "carol"] as const) heardNothing(who, issue.identifier);
  });

  it("canceled → the author, with the reason", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Maybe later", work: true, changeType: "feat", noDependency: "none" });
    await saveIssue(as.bob, { identifier: issue.identifier, status: "canceled", cancelReason: "Superseded by <NTF-99>" });
    const got = await heardEverywhere("alice", issue.identifier);
    expect(got.telegram).toContain("was canceled.");
    expect(got.telegram).toContain("<b>Reason:</b> Superseded by &lt;NTF-99&gt;");
    expect(got.slack).toContain("*Reason:* Superseded by &lt;NTF-99&gt;");
    expect(got.discord).toContain("**Reason:** Superseded by \\<NTF-99\\>");
    expect(got.email).toContain("Reason: Superseded by <NTF-99>");
    await settled();
    heardNothing("bob", issue.identifier);
  });

  it("review → the reviewer, with the last checkpoint", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Needs eyes", work: true, changeType: "feat", noDependency: "none" });
    const claim = await claimIssue(org.agents.carol.ctx, { identifier: issue.identifier });
    await checkpoint(org.agents.carol.ctx, { identifier: issue.identifier, claimToken: claim.claimToken, done: "wrote the parser", next: "review the edge cases", gotchas: "dates are UTC" });
    await saveIssue(org.agents.carol.ctx, { identifier: issue.identifier, status: "review", assignee: bobEmail, claimToken: claim.claimToken });
    const got = await heardEverywhere("bob", issue.identifier);
    expect(smtp.mailsTo(bobEmail).find((m) => m.subject.includes(issue.identifier))!.subject).toBe(`${issue.identifier} · Needs eyes is waiting for your review.`);
    for (const text of Object.values(got)) {
      expect(text).toMatch(/Done:\**(<\/b>)? wrote the parser/);
      expect(text).toMatch(/Next:\**(<\/b>)? review the edge cases/);
      expect(text).toMatch(/Gotchas:\**(<\/b>)? dates are UTC/);
    }
    await settled();
    heardNothing("carol", issue.identifier);
    heardNothing("alice", issue.identifier);
  });

  it("assigned → the assignee, with the urgency and deadline", async () => {
    const due = new Date(clock.now().getTime() + 2 * 86_400_000).toISOString();
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Urgent thing", work: true, changeType: "feat", noDependency: "none", priority: "urgent", dueAt: due });
    await saveIssue(org.agents.alice.ctx, { identifier: issue.identifier, assignee: bobEmail });
    const got = await heardEverywhere("bob", issue.identifier);
    expect(got.email).toContain("Urgency: urgent");
    expect(got.email).toContain(`Deadline: ${due.replace(/\.\d{3}Z$/, "Z")}`);
    expect(got.telegram).toContain("<b>Urgency:</b> urgent");
    await settled();
    heardNothing("alice", issue.identifier);
  });

  it("a lapsed lease → the person whose agent held it", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Abandoned", work: true, changeType: "feat", noDependency: "none" });
    await claimIssue(org.agents.carol.ctx, { identifier: issue.identifier });
    clock.advance(services.config.leaseTtlMs + 60_000);
    expect((await reclaimSweep(services)).reclaimed).toBeGreaterThanOrEqual(1);
    const got = await heardEverywhere("carol", issue.identifier);
    expect(got.telegram).toContain("was reclaimed");
    await settled();
    heardNothing("alice", issue.identifier);
  });
});

describe("delivery", () => {
  it("a mute set between the enqueue and the send suppresses the message; unmuted, the next one arrives", async () => {
    await stopRunner();
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Muted one", work: true, changeType: "feat", noDependency: "none" });
    await saveIssue(as.bob, { identifier: issue.identifier, status: "canceled", cancelReason: "no" });
    await setMute(as.alice, { kind: "canceled", muted: true });
    await startRunner();
    const [{ id: issueId }] = await query<{ id: string }>(services.db, sql`select id from issues where identifier = ${issue.identifier} and org_id = ${org.orgId}`);
    await waitFor(async () => (await deliveriesTo(org.agents.alice.userId)).find((d) => d.issueId === issueId)?.state === "muted", 10_000, "the muted delivery");
    heardNothing("alice", issue.identifier);
    await setMute(as.alice, { kind: "canceled", muted: false });
    const next = await saveIssue(org.agents.alice.ctx, { title: "Heard one", work: true, changeType: "feat", noDependency: "none" });
    await saveIssue(as.bob, { identifier: next.identifier, status: "canceled", cancelReason: "no" });
    await heardEverywhere("alice", next.identifier);
    await settled();
  });

  it("a 429 with Retry-After: 2 from Telegram, Slack or Discord is sent again two seconds later, once", async () => {
    telegram.refuseNext(429, "Too Many Requests: retry after 2", 2);
    slack.refuseNext({ status: 429, retryAfter: 2 });
    discord.refuseNext({ status: 429, retryAfter: 2 });
    const keys = await Promise.all((["telegram", "slack", "discord"] as const).map((channel) => sendTest(as.alice, { channel })));
    for (const { key } of keys) {
      await waitFor(async () => (await services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key)))[0]?.state === "sent", 15_000, `${key} sent`);
    }
    const isTest = (text: string) => text.includes("Retasc test message");
    const attempts = {
      telegram: telegram.messagesTo(chats.alice).filter((c) => isTest(String(c.body.text))).map((c) => c.at),
      slack: slack.messagesTo(slackUsers.alice).filter((m) => isTest(m.text)).map((m) => m.at),
      discord: discord.messages.filter((m) => m.channelId === `dm${discordUsers.alice}` && isTest(m.content)).map((m) => m.at),
    };
    for (const [channel, at] of Object.entries(attempts)) {
      expect(at, channel).toHaveLength(2);
      expect(at[1]! - at[0]!, channel).toBeGreaterThanOrEqual(1_950);
      expect(at[1]! - at[0]!, channel).toBeLessThan(4_000);
    }
  });

  it("a permanent refusal stops retrying and marks the binding broken with the reason; disconnecting keeps the mutes", async () => {
    telegram.refuseNext(403, "Forbidden: bot was blocked by the user");
    const calls = telegram.messagesTo(chats.carol).length;
    const { key } = await sendTest(as.carol, { channel: "telegram" });
    await waitFor(async () => (await services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key)))[0]?.state === "failed", 10_000, "the failed delivery");
    await sleep(500);
    expect(telegram.messagesTo(chats.carol).length).toBe(calls + 1);
    const telegramRow = (await notificationSettings(as.carol)).channels.find((c) => c.channel === "telegram");
    expect(telegramRow).toMatchObject({ status: "broken", brokenReason: "Forbidden: bot was blocked by the user" });

    await setMute(as.carol, { kind: "done", muted: true });
    expect(await disconnect(as.carol, { channel: "telegram" })).toEqual({ disconnected: true });
    const settings = await notificationSettings(as.carol);
    expect(settings.channels.find((c) => c.channel === "telegram")?.status).toBeNull();
    expect(settings.kinds.find((k) => k.kind === "done")?.muted).toBe(true);
    expect((await connectTelegram("carol")).reply.body).toMatchObject({ connected: true });
    const [rebound] = await services.db.select().from(notifyBindings).where(and(eq(notifyBindings.userId, org.agents.carol.userId), eq(notifyBindings.channel, "telegram")));
    expect(rebound!.status).toBe("active");
  });

  it("a refused email recipient (550) marks the email binding broken", async () => {
    smtp.rejected.add(bobEmail.toLowerCase());
    try {
      const { key } = await sendTest(as.bob, { channel: "email" });
      await waitFor(async () => (await services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key)))[0]?.state === "failed", 10_000, "the failed email");
      expect((await notificationSettings(as.bob)).channels.find((c) => c.channel === "email")).toMatchObject({ status: "broken", brokenReason: expect.stringContaining("550") });
    } finally {
      smtp.rejected.delete(bobEmail.toLowerCase());
    }
  });

  it("Slack's and Discord's permanent refusals mark those bindings broken with the platform's reason", async () => {
    slack.refuseNext({ error: "account_inactive" });
    discord.refuseNext({ status: 403, code: 50007, message: "Cannot send messages to this user" });
    const keys = await Promise.all((["slack", "discord"] as const).map((channel) => sendTest(as.bob, { channel })));
    for (const { key } of keys) {
      await waitFor(async () => (await services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key)))[0]?.state === "failed", 10_000, `${key} failed`);
    }
    const channels = (await notificationSettings(as.bob)).channels;
    expect(channels.find((c) => c.channel === "slack")).toMatchObject({ status: "broken", brokenReason: "account_inactive" });
    expect(channels.find((c) => c.channel === "discord")).toMatchObject({ status: "broken", brokenReason: "Cannot send messages to this user" });
    expect(channels.find((c) => c.channel === "telegram")?.status).toBe("active");
  });

  it.runIf(testDriver === "postgres")("a worker SIGKILLed while the platform holds its request delivers once", async () => {
    await stopRunner();
    const hold = telegram.hold();
    const worker = spawnWorker({
      ...env(),
      DATABASE_URL: tdb.url!,
      REDIS_URL: "",
      RETASC_MASTER_KEY: masterKey.toString("base64"),
      JOB_LOCK_MS: "1500",
    });
    let second: ReturnType<typeof spawnWorker> | null = null;
    try {
      const before = telegram.messagesTo(chats.alice).length;
      const { key } = await sendTest(as.alice, { channel: "telegram" });
      await waitFor(async () => telegram.messagesTo(chats.alice).length > before, 30_000, `the send reached Telegram (worker: ${worker.output()})`);
      await worker.kill();
      hold.release();
      second = spawnWorker({ ...env(), DATABASE_URL: tdb.url!, REDIS_URL: "", RETASC_MASTER_KEY: masterKey.toString("base64"), JOB_LOCK_MS: "1500" });
      const outboxId = Number(key.split(":")[1]);
      await waitFor(
        async () => (await query<{ done: boolean }>(services.db, sql`select completed_at is not null as done from outbox where id = ${outboxId}`))[0]?.done,
        30_000,
        `the job settled after the crash (worker: ${second.output()})`,
      );
      expect(telegram.messagesTo(chats.alice).length).toBe(before + 1);
      const [row] = await services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key));
      expect(row).toMatchObject({ state: "unconfirmed", attempts: 1 });
    } finally {
      hold.release();
      await worker.kill();
      await second?.kill();
      await startRunner();
    }
  });
});
