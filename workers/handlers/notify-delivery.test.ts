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
import { receiveTelegramUpdate } from "../../server/notify/telegram-webhook.ts";
import { refusal, peopleOf, type Person } from "../../server/orgs/testing.ts";
import { checkpoint, claimIssue, reclaimSweep } from "../../server/queue/index.ts";
import { createTestDatabase, servicesFor, testConfig, testDriver, TestClock, type TestDatabase } from "../../server/testing/db.ts";
import { startFakeSmtp, type FakeSmtp } from "../../server/testing/fake-smtp.ts";
import { startFakeTelegram, type FakeTelegram } from "../../server/testing/fake-telegram.ts";
import { seedOrg, type SeededOrg } from "../../server/testing/fixtures.ts";
import { retascJobs } from "../catalog.ts";
import { startInlineRunner } from "../inline.ts";
import type { JobRunner } from "../runner.ts";
import { spawnWorker } from "../testing/spawn.ts";
import { sleep, waitFor } from "../testing/wait.ts";

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
let runner: JobRunner | null = null;
let org: SeededOrg;
let as: Record<Person, Ctx>;
const clock = new TestClock(Date.now());
const chats = { alice: 7001, carol: 7003 } as const;
let bobEmail: string;

const env = () => ({
  TELEGRAM_BOT_TOKEN: telegram.token,
  TELEGRAM_BOT_USERNAME: "retasc_test_bot",
  TELEGRAM_WEBHOOK_SECRET: secret,
  TELEGRAM_API_URL: telegram.url,
  SMTP_URL: smtp.url,
  SMTP_FROM: "Retasc <retasc@example.com>",
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
  [telegram, smtp, tdb] = await Promise.all([startFakeTelegram(), startFakeSmtp(), createTestDatabase()]);
  services = servicesFor(tdb.database, { config: testConfig(env()), keyring: new Keyring(masterKey), clock });
  org = await seedOrg(services, { prefix: "NTF" });
  as = (await peopleOf(services, org)).as;
  const [bob] = await query<{ email: string }>(services.db, sql`select email from "user" where id = ${org.agents.bob.userId}`);
  bobEmail = bob!.email;
  await startRunner();
});
afterAll(async () => {
  await stopRunner();
  await Promise.all([telegram?.close(), smtp?.close(), tdb?.close()]);
});

const connectTelegram = async (who: "alice" | "carol") => {
  const { link } = await startConnect(as[who], { channel: "telegram" });
  const code = new URL(link!).searchParams.get("start")!;
  const update = JSON.stringify(telegram.update(chats[who], `/start ${code}`, who));
  return { code, reply: await receiveTelegramUpdate(services, log, update, secret) };
};

const deliveriesTo = (userId: string) =>
  services.db.select().from(notifyDeliveries).where(and(eq(notifyDeliveries.orgId, org.orgId), eq(notifyDeliveries.userId, userId)));

const textsTo = (chat: number) => telegram.messagesTo(chat).map((c) => String(c.body.text));

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
    // Replayed: the code was used.
    expect(await receiveTelegramUpdate(services, log, body, secret)).toEqual({ status: 200, body: { ok: true, connected: false } });
    expect(textsTo(chats.alice).at(-1)).toMatch(/expired or was already used/);
    expect((await connectTelegram("carol")).reply.body).toMatchObject({ connected: true });
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
    await startEmail(as.bob, { email: bobEmail });
    const mail = smtp.mailsTo(bobEmail).at(-1)!;
    const code = mail.subject.match(/(\d{6})/)![1]!;
    expect((await notificationSettings(as.bob)).channels.find((c) => c.channel === "email")).toMatchObject({ status: "pending" });
    const wrong = code === "000000" ? "111111" : "000000";
    expect((await refusal(confirmEmail(as.bob, { code: wrong }))).code).toBe("INVALID_INPUT");
    expect(await confirmEmail(as.bob, { code })).toEqual({ confirmed: true });
    expect((await notificationSettings(as.bob)).channels.find((c) => c.channel === "email")).toMatchObject({ status: "active", label: bobEmail });
  });
});

describe("who hears what", () => {
  it("done → the author, not the actor; the title is escaped for Telegram and the message links to the Dash", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Fix <b>login</b> & @channel", work: true, noDependency: "none" });
    const claim = await claimIssue(org.agents.bob.ctx, { identifier: issue.identifier });
    const before = smtp.mailsTo(bobEmail).length;
    await saveIssue(org.agents.bob.ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    const text = await waitFor(async () => textsTo(chats.alice).find((t) => t.includes(issue.identifier)), 10_000, "alice hears of done");
    expect(text).toContain(`<b>${issue.identifier} · Fix &lt;b&gt;login&lt;/b&gt; &amp; @channel</b> was marked done.`);
    expect(text).toContain(`<a href="https://retasc.example.com/dash/issues/${issue.identifier}">`);
    await sleep(300);
    expect(smtp.mailsTo(bobEmail).length).toBe(before);
  });

  it("a person is never told of their own action", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Own work", work: true, noDependency: "none" });
    const claim = await claimIssue(org.agents.alice.ctx, { identifier: issue.identifier });
    await saveIssue(org.agents.alice.ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    await waitFor(async () => (await query<{ n: number }>(services.db, sql`select count(*)::int as n from outbox where job = 'notify.issue_event' and completed_at is null`))[0]!.n === 0, 10_000, "the event handled");
    await sleep(300);
    expect(textsTo(chats.alice).some((t) => t.includes(issue.identifier))).toBe(false);
  });

  it("canceled → the author, with the reason", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Maybe later", work: true, noDependency: "none" });
    await saveIssue(as.bob, { identifier: issue.identifier, status: "canceled", cancelReason: "Superseded by <NTF-99>" });
    const text = await waitFor(async () => textsTo(chats.alice).find((t) => t.includes(issue.identifier)), 10_000, "alice hears of the cancel");
    expect(text).toContain("was canceled.");
    expect(text).toContain("<b>Reason:</b> Superseded by &lt;NTF-99&gt;");
  });

  it("review → the reviewer by email, with the last checkpoint", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Needs eyes", work: true, noDependency: "none" });
    const claim = await claimIssue(org.agents.carol.ctx, { identifier: issue.identifier });
    await checkpoint(org.agents.carol.ctx, { identifier: issue.identifier, claimToken: claim.claimToken, done: "wrote the parser", next: "review the edge cases", gotchas: "dates are UTC" });
    await saveIssue(org.agents.carol.ctx, { identifier: issue.identifier, status: "review", assignee: bobEmail, claimToken: claim.claimToken });
    const mail = await waitFor(async () => smtp.mailsTo(bobEmail).find((m) => m.subject.includes(issue.identifier)), 10_000, "bob's review email");
    expect(mail.subject).toContain(`${issue.identifier} · Needs eyes is waiting for your review.`);
    expect(mail.text).toContain("Done: wrote the parser");
    expect(mail.text).toContain("Next: review the edge cases");
    expect(mail.text).toContain("Gotchas: dates are UTC");
    expect(mail.text).toContain(`https://retasc.example.com/dash/issues/${issue.identifier}`);
    expect(textsTo(chats.carol).some((t) => t.includes(issue.identifier))).toBe(false);
  });

  it("assigned → the assignee, with the urgency and deadline", async () => {
    const due = new Date(clock.now().getTime() + 2 * 86_400_000).toISOString();
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Urgent thing", work: true, noDependency: "none", priority: "urgent", dueAt: due });
    await saveIssue(org.agents.alice.ctx, { identifier: issue.identifier, assignee: bobEmail });
    const mail = await waitFor(async () => smtp.mailsTo(bobEmail).find((m) => m.subject.includes(issue.identifier)), 10_000, "bob's assignment email");
    expect(mail.text).toContain("Urgency: urgent");
    expect(mail.text).toContain(`Deadline: ${due.replace(/\.\d{3}Z$/, "Z")}`);
  });

  it("a lapsed lease → the person whose agent held it", async () => {
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Abandoned", work: true, noDependency: "none" });
    await claimIssue(org.agents.carol.ctx, { identifier: issue.identifier });
    clock.advance(services.config.leaseTtlMs + 60_000);
    expect((await reclaimSweep(services)).reclaimed).toBeGreaterThanOrEqual(1);
    const text = await waitFor(async () => textsTo(chats.carol).find((t) => t.includes(issue.identifier)), 10_000, "carol hears of the reclaim");
    expect(text).toContain("was reclaimed");
    expect(textsTo(chats.alice).some((t) => t.includes(issue.identifier))).toBe(false);
  });
});

describe("delivery", () => {
  it("a mute set between the enqueue and the send suppresses the message; unmuted, the next one arrives", async () => {
    await stopRunner();
    const issue = await saveIssue(org.agents.alice.ctx, { title: "Muted one", work: true, noDependency: "none" });
    await saveIssue(as.bob, { identifier: issue.identifier, status: "canceled", cancelReason: "no" });
    await setMute(as.alice, { kind: "canceled", muted: true });
    await startRunner();
    const [{ id: issueId }] = await query<{ id: string }>(services.db, sql`select id from issues where identifier = ${issue.identifier} and org_id = ${org.orgId}`);
    await waitFor(async () => (await deliveriesTo(org.agents.alice.userId)).find((d) => d.issueId === issueId)?.state === "muted", 10_000, "the muted delivery");
    expect(textsTo(chats.alice).some((t) => t.includes(issue.identifier))).toBe(false);
    await setMute(as.alice, { kind: "canceled", muted: false });
    const next = await saveIssue(org.agents.alice.ctx, { title: "Heard one", work: true, noDependency: "none" });
    await saveIssue(as.bob, { identifier: next.identifier, status: "canceled", cancelReason: "no" });
    await waitFor(async () => textsTo(chats.alice).find((t) => t.includes(next.identifier)), 10_000, "the unmuted message");
  });

  it("a 429 with Retry-After: 2 is sent again two seconds later, once", async () => {
    telegram.refuseNext(429, "Too Many Requests: retry after 2", 2);
    const { key } = await sendTest(as.alice, { channel: "telegram" });
    await waitFor(async () => (await services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key)))[0]?.state === "sent", 15_000, "the test message sent");
    const tries = telegram.messagesTo(chats.alice).filter((c) => String(c.body.text).includes("Retasc test message"));
    expect(tries).toHaveLength(2);
    const gap = tries[1]!.at - tries[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(1_950);
    expect(gap).toBeLessThan(4_000);
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
