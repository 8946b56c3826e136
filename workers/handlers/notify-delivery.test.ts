import { and, eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { notifyBindings, notifyDeliveries } from "../../db/schema/index.ts";
import { saveIssue } from "../../server/issues/index.ts";
import { disconnect, notificationSettings, sendTest, setMute } from "../../server/notify/bindings.ts";
import { testDriver } from "../../server/testing/db.ts";
import { sleep, waitFor } from "../../server/testing/wait.ts";
import { spawnWorker } from "../testing/spawn.ts";
import { chats, discordUsers, notifyWorld, slackUsers } from "../testing/notify-world.ts";

/**
 * Notifications on their way out through the outbox: a mute read at send time, a platform's 429
 * retried after its Retry-After, permanent refusals marking the binding broken, and a worker killed
 * mid-send delivering once. Everyone is bound on every channel first; the local fakes play each
 * platform.
 */
// w: the file's fakes, database and org (workers/testing/notify-world.ts).
const w = notifyWorld();
const { masterKey, emails, as, env, startRunner, stopRunner, connectTelegram, bindEveryone, deliveriesTo, heardEverywhere, heardNothing, settled } = w;
beforeAll(() => bindEveryone());

describe("delivery", () => {
  it("a mute set between the enqueue and the send suppresses the message; unmuted, the next one arrives", async () => {
    await stopRunner();
    const issue = await saveIssue(w.org.agents.alice.ctx, { title: "Muted one", work: true, changeType: "feat", noDependency: "none" });
    await saveIssue(as.bob, { identifier: issue.identifier, status: "canceled", cancelReason: "no" });
    await setMute(as.alice, { kind: "canceled", muted: true });
    await startRunner();
    const [{ id: issueId }] = await query<{ id: string }>(w.services.db, sql`select id from issues where identifier = ${issue.identifier} and org_id = ${w.org.orgId}`);
    await waitFor(async () => (await deliveriesTo(w.org.agents.alice.userId)).find((d) => d.issueId === issueId)?.state === "muted", 10_000, "the muted delivery");
    heardNothing("alice", issue.identifier);
    await setMute(as.alice, { kind: "canceled", muted: false });
    const next = await saveIssue(w.org.agents.alice.ctx, { title: "Heard one", work: true, changeType: "feat", noDependency: "none" });
    await saveIssue(as.bob, { identifier: next.identifier, status: "canceled", cancelReason: "no" });
    await heardEverywhere("alice", next.identifier);
    await settled();
  });

  it("a 429 with Retry-After: 2 from Telegram, Slack or Discord is sent again two seconds later, once", async () => {
    w.telegram.refuseNext(429, "Too Many Requests: retry after 2", 2);
    w.slack.refuseNext({ status: 429, retryAfter: 2 });
    w.discord.refuseNext({ status: 429, retryAfter: 2 });
    const keys = await Promise.all((["telegram", "slack", "discord"] as const).map((channel) => sendTest(as.alice, { channel })));
    for (const { key } of keys) {
      await waitFor(async () => (await w.services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key)))[0]?.state === "sent", 15_000, `${key} sent`);
    }
    const isTest = (text: string) => text.includes("Retasc test message");
    const attempts = {
      telegram: w.telegram.messagesTo(chats.alice).filter((c) => isTest(String(c.body.text))).map((c) => c.at),
      slack: w.slack.messagesTo(slackUsers.alice).filter((m) => isTest(m.text)).map((m) => m.at),
      discord: w.discord.messages.filter((m) => m.channelId === `dm${discordUsers.alice}` && isTest(m.content)).map((m) => m.at),
    };
    for (const [channel, at] of Object.entries(attempts)) {
      expect(at, channel).toHaveLength(2);
      expect(at[1]! - at[0]!, channel).toBeGreaterThanOrEqual(1_950);
      expect(at[1]! - at[0]!, channel).toBeLessThan(4_000);
    }
  });

  it("a permanent refusal stops retrying and marks the binding broken with the reason; disconnecting keeps the mutes", async () => {
    w.telegram.refuseNext(403, "Forbidden: bot was blocked by the user");
    const calls = w.telegram.messagesTo(chats.carol).length;
    const { key } = await sendTest(as.carol, { channel: "telegram" });
    await waitFor(async () => (await w.services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key)))[0]?.state === "failed", 10_000, "the failed delivery");
    await sleep(500);
    expect(w.telegram.messagesTo(chats.carol).length).toBe(calls + 1);
    const telegramRow = (await notificationSettings(as.carol)).channels.find((c) => c.channel === "telegram");
    expect(telegramRow).toMatchObject({ status: "broken", brokenReason: "Forbidden: bot was blocked by the user" });

    await setMute(as.carol, { kind: "done", muted: true });
    expect(await disconnect(as.carol, { channel: "telegram" })).toEqual({ disconnected: true });
    const settings = await notificationSettings(as.carol);
    expect(settings.channels.find((c) => c.channel === "telegram")?.status).toBeNull();
    expect(settings.kinds.find((k) => k.kind === "done")?.muted).toBe(true);
    expect((await connectTelegram("carol")).reply.body).toMatchObject({ connected: true });
    const [rebound] = await w.services.db.select().from(notifyBindings).where(and(eq(notifyBindings.userId, w.org.agents.carol.userId), eq(notifyBindings.channel, "telegram")));
    expect(rebound!.status).toBe("active");
  });

  it("a refused email recipient (550) marks the email binding broken", async () => {
    w.smtp.rejected.add(emails.bob.toLowerCase());
    try {
      const { key } = await sendTest(as.bob, { channel: "email" });
      await waitFor(async () => (await w.services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key)))[0]?.state === "failed", 10_000, "the failed email");
      expect((await notificationSettings(as.bob)).channels.find((c) => c.channel === "email")).toMatchObject({ status: "broken", brokenReason: expect.stringContaining("550") });
    } finally {
      w.smtp.rejected.delete(emails.bob.toLowerCase());
    }
  });

  it("Slack's and Discord's permanent refusals mark those bindings broken with the platform's reason", async () => {
    w.slack.refuseNext({ error: "account_inactive" });
    w.discord.refuseNext({ status: 403, code: 50007, message: "Cannot send messages to this user" });
    const keys = await Promise.all((["slack", "discord"] as const).map((channel) => sendTest(as.bob, { channel })));
    for (const { key } of keys) {
      await waitFor(async () => (await w.services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key)))[0]?.state === "failed", 10_000, `${key} failed`);
    }
    const channels = (await notificationSettings(as.bob)).channels;
    expect(channels.find((c) => c.channel === "slack")).toMatchObject({ status: "broken", brokenReason: "account_inactive" });
    expect(channels.find((c) => c.channel === "discord")).toMatchObject({ status: "broken", brokenReason: "Cannot send messages to this user" });
    expect(channels.find((c) => c.channel === "telegram")?.status).toBe("active");
  });

  it.runIf(testDriver === "postgres")("a worker SIGKILLed while the platform holds its request delivers once", async () => {
    await stopRunner();
    const hold = w.telegram.hold();
    const worker = spawnWorker({
      ...env(),
      DATABASE_URL: w.tdb.url!,
      REDIS_URL: "",
      RETASC_MASTER_KEY: masterKey.toString("base64"),
      JOB_LOCK_MS: "1500",
    });
    let second: ReturnType<typeof spawnWorker> | null = null;
    try {
      const before = w.telegram.messagesTo(chats.alice).length;
      const { key } = await sendTest(as.alice, { channel: "telegram" });
      await waitFor(async () => w.telegram.messagesTo(chats.alice).length > before, 30_000, `the send reached Telegram (worker: ${worker.output()})`);
      await worker.kill();
      hold.release();
      second = spawnWorker({ ...env(), DATABASE_URL: w.tdb.url!, REDIS_URL: "", RETASC_MASTER_KEY: masterKey.toString("base64"), JOB_LOCK_MS: "1500" });
      const outboxId = Number(key.split(":")[1]);
      await waitFor(
        async () => (await query<{ done: boolean }>(w.services.db, sql`select completed_at is not null as done from outbox where id = ${outboxId}`))[0]?.done,
        30_000,
        `the job settled after the crash (worker: ${second.output()})`,
      );
      expect(w.telegram.messagesTo(chats.alice).length).toBe(before + 1);
      const [row] = await w.services.db.select().from(notifyDeliveries).where(eq(notifyDeliveries.key, key));
      expect(row).toMatchObject({ state: "unconfirmed", attempts: 1 });
    } finally {
      hold.release();
      await worker.kill();
      await second?.kill();
      await startRunner();
    }
  });
});
