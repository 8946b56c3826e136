import crypto from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, expect } from "vitest";
import { query } from "../../db/client.ts";
import { notifyDeliveries } from "../../db/schema/index.ts";
import type { Ctx, Services } from "../../server/context.ts";
import { Keyring } from "../../server/crypto/index.ts";
import { createLogger } from "../../server/log.ts";
import { confirmEmail, notificationSettings, startConnect, startEmail } from "../../server/notify/bindings.ts";
import { receiveDiscordInteraction } from "../../server/notify/discord.ts";
import { completeSlackInstall, receiveSlackCommand, slackInstallUrl } from "../../server/notify/slack.ts";
import { receiveTelegramUpdate } from "../../server/notify/telegram-webhook.ts";
import { peopleOf, type Person } from "../../server/orgs/testing.ts";
import { createTestDatabase, servicesFor, testConfig, TestClock, type TestDatabase } from "../../server/testing/db.ts";
import { seedOrg, type SeededOrg } from "../../server/testing/fixtures.ts";
import { notifyEnv } from "../../server/testing/notify-env.ts";
import { waitFor } from "../../server/testing/wait.ts";
import { startFakeDiscord, type FakeDiscord } from "../../test/fakes/discord.ts";
import { startFakeSlack, type FakeSlack } from "../../test/fakes/slack.ts";
import { startFakeSmtp, type FakeSmtp } from "../../test/fakes/smtp.ts";
import { startFakeTelegram, type FakeTelegram } from "../../test/fakes/telegram.ts";
import { retascJobs } from "../catalog.ts";
import { startInlineRunner } from "../inline.ts";
import type { JobRunner } from "../runner.ts";

/**
 * What the notification suites share (workers/handlers/notify-*.test.ts): an org of three people,
 * the local fake Telegram, Slack, Discord and SMTP server every channel points at, the in-process
 * runner that delivers through the outbox, and what each person heard.
 */

export const log = createLogger("silent");
export const secret = "telegram-webhook-secret-for-tests";
export const chats = { alice: 7001, bob: 7002, carol: 7003 } as const;
export const slackUsers = { alice: "UALICE", bob: "UBOB", carol: "UCAROL" } as const;
export const discordUsers = { alice: "9001", bob: "9002", carol: "9003" } as const;
const people = ["alice", "bob", "carol"] as const;

/**
 * Starts the fakes, a database and the runner before the calling file's tests and stops them after
 * (each file calls it: with isolate: false a module's own top-level hooks would be registered in
 * the first file that imports it only). The fakes, the database and the org are fields of the
 * returned world, set by its beforeAll; the rest is there at once.
 */
export function notifyWorld() {
  const masterKey = crypto.randomBytes(32);
  const clock = new TestClock(Date.now());
  /** Each person's sign-up address; `as`, each person's session. Both filled in beforeAll. */
  const emails = {} as Record<Person, string>;
  const as = {} as Record<Person, Ctx>;
  let runner: JobRunner | null = null;
  const w = {
    tdb: undefined as unknown as TestDatabase,
    services: undefined as unknown as Services,
    telegram: undefined as unknown as FakeTelegram,
    smtp: undefined as unknown as FakeSmtp,
    slack: undefined as unknown as FakeSlack,
    discord: undefined as unknown as FakeDiscord,
    org: undefined as unknown as SeededOrg,
  };

  const env = () => ({
    ...notifyEnv(w, { telegramSecret: secret, botUsername: "retasc_test_bot" }),
    PUBLIC_URL: "https://retasc.example.com",
    JOB_BACKOFF_MS: "100",
    OUTBOX_POLL_MS: "200",
  });

  const startRunner = async () => {
    runner = await startInlineRunner({ services: w.services, database: w.tdb.database, log, catalog: retascJobs, sweeps: [], exclusive: false });
  };
  const stopRunner = async () => {
    await runner?.stop();
    runner = null;
  };

  beforeAll(async () => {
    [w.telegram, w.smtp, w.slack, w.discord, w.tdb] = await Promise.all([startFakeTelegram(), startFakeSmtp(), startFakeSlack(), startFakeDiscord(), createTestDatabase()]);
    w.services = servicesFor(w.tdb.database, { config: testConfig(env()), keyring: new Keyring(masterKey), clock });
    w.org = await seedOrg(w.services, { prefix: "NTF" });
    Object.assign(as, (await peopleOf(w.services, w.org)).as);
    for (const who of people) {
      const [row] = await query<{ email: string }>(w.services.db, sql`select email from "user" where id = ${w.org.agents[who].userId}`);
      emails[who] = row!.email;
    }
    await startRunner();
  });
  afterAll(async () => {
    await stopRunner();
    expect(w.slack.problems).toEqual([]);
    expect(w.discord.problems).toEqual([]);
    await Promise.all([w.telegram?.close(), w.smtp?.close(), w.slack?.close(), w.discord?.close(), w.tdb?.close()]);
  });

  const connectTelegram = async (who: Person) => {
    const { link } = await startConnect(as[who], { channel: "telegram" });
    const code = new URL(link!).searchParams.get("start")!;
    const update = JSON.stringify(w.telegram.update(chats[who], `/start ${code}`, who));
    return { code, reply: await receiveTelegramUpdate(w.services, log, update, secret) };
  };

  /**
   * Binds every channel of every person the way notify-binding.test.ts does, without its
   * refusals: Telegram, email, Slack (installed by Alice, an admin) and Discord, all active.
   */
  const bindEveryone = async () => {
    const base = "https://retasc.example.com";
    const install = new URL(await slackInstallUrl(as.alice, base));
    const state = install.searchParams.get("state")!;
    await completeSlackInstall(as.alice, { code: w.slack.issueCode(install.searchParams.get("redirect_uri")!), state, baseUrl: base });
    const now = Math.floor(clock.now().getTime() / 1000);
    for (const who of people) {
      await connectTelegram(who);
      await startEmail(as[who], { email: emails[who] });
      await confirmEmail(as[who], { code: w.smtp.mailsTo(emails[who]).at(-1)!.subject.match(/(\d{6})/)![1]! });
      const slackCommand = w.slack.slashCommand(slackUsers[who], `connect ${(await startConnect(as[who], { channel: "slack" })).code}`, { timestamp: now });
      await receiveSlackCommand(w.services, log, slackCommand.body, new Headers(slackCommand.headers));
      const discordCommand = w.discord.interaction(w.discord.connectCommand(discordUsers[who], (await startConnect(as[who], { channel: "discord" })).code), { timestamp: now });
      await receiveDiscordInteraction(w.services, log, discordCommand.body, new Headers(discordCommand.headers));
      const statuses = (await notificationSettings(as[who])).channels.map((c) => [c.channel, c.status]);
      expect(statuses, who).toEqual(["telegram", "email", "slack", "discord"].map((channel) => [channel, "active"]));
    }
  };

  const deliveriesTo = (userId: string) =>
    w.services.db.select().from(notifyDeliveries).where(and(eq(notifyDeliveries.orgId, w.org.orgId), eq(notifyDeliveries.userId, userId)));

  const textsTo = (chat: number) => w.telegram.messagesTo(chat).map((c) => String(c.body.text));

  /** What `who` received about `identifier` on each channel. */
  const heard = (who: Person, identifier: string) => ({
    telegram: textsTo(chats[who]).filter((t) => t.includes(identifier)),
    email: w.smtp.mailsTo(emails[who]).filter((m) => m.subject.includes(identifier)).map((m) => m.text),
    slack: w.slack.messagesTo(slackUsers[who]).map((m) => m.text).filter((t) => t.includes(identifier)),
    discord: w.discord.messagesTo(discordUsers[who]).map((m) => m.content).filter((t) => t.includes(identifier)),
  });

  /** Waits until `who` has heard of `identifier` on all four channels; each channel's one message. */
  const heardEverywhere = async (who: Person, identifier: string) => {
    await waitFor(async () => Object.values(heard(who, identifier)).every((list) => list.length > 0), 10_000, `${who} hears of ${identifier} on every channel`);
    const got = heard(who, identifier);
    for (const list of Object.values(got)) expect(list).toHaveLength(1);
    return { telegram: got.telegram[0]!, email: got.email[0]!, slack: got.slack[0]!, discord: got.discord[0]! };
  };

  const heardNothing = (who: Person, identifier: string) => expect(heard(who, identifier)).toEqual({ telegram: [], email: [], slack: [], discord: [] });

  /** Every notification job settled: after it, whoever was not told has heard nothing. */
  const settled = () =>
    waitFor(
      async () => (await query<{ n: number }>(w.services.db, sql`select count(*)::int as n from outbox where job like 'notify.%' and completed_at is null and failed_at is null`))[0]!.n === 0,
      10_000,
      "every notification job settled",
    );

  return Object.assign(w, { masterKey, clock, emails, as, env, startRunner, stopRunner, connectTelegram, bindEveryone, deliveriesTo, textsTo, heardEverywhere, heardNothing, settled });
}
