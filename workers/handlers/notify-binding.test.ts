import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { confirmEmail, notificationSettings, startConnect, startEmail } from "../../server/notify/bindings.ts";
import { receiveDiscordInteraction } from "../../server/notify/discord.ts";
import { completeSlackInstall, receiveSlackCommand, slackInstallUrl } from "../../server/notify/slack.ts";
import { receiveTelegramUpdate } from "../../server/notify/telegram-webhook.ts";
import { refusal } from "../../server/orgs/testing.ts";
import { chats, discordUsers, log, notifyWorld, secret, slackUsers } from "../testing/notify-world.ts";

/**
 * Binding each notification channel the way people do: Telegram by the signed webhook's
 * /start <code>, email by the 6-digit code, Slack by the app's install and /retasc connect, Discord
 * by a signed /connect; the local fakes play each platform. What is then delivered is in
 * notify-recipients.test.ts and notify-delivery.test.ts.
 */
// w: the file's fakes, database and org (workers/testing/notify-world.ts).
const w = notifyWorld();
const { clock, emails, as, connectTelegram, textsTo } = w;

describe("binding", () => {
  it("binds a Telegram chat with /start <code> under the secret header; a forged header or a used code binds nothing", async () => {
    const { link } = await startConnect(as.alice, { channel: "telegram" });
    expect(link).toMatch(/^https:\/\/t\.me\/retasc_test_bot\?start=[A-Za-z0-9_-]{24}$/);
    const code = new URL(link!).searchParams.get("start")!;
    const body = JSON.stringify(w.telegram.update(chats.alice, `/start ${code}`, "alice"));
    expect((await receiveTelegramUpdate(w.services, log, body, "wrong-secret")).status).toBe(401);
    expect((await receiveTelegramUpdate(w.services, log, body, null)).status).toBe(401);
    expect((await receiveTelegramUpdate(w.services, log, "{not json", secret)).status).toBe(400);
    expect(await receiveTelegramUpdate(w.services, log, body, secret)).toEqual({ status: 200, body: { ok: true, connected: true } });
    // Redelivered: acknowledged, not acted on; the same code in a new update is spent.
    expect(await receiveTelegramUpdate(w.services, log, body, secret)).toEqual({ status: 200, body: { ok: true, duplicate: true } });
    const again = JSON.stringify(w.telegram.update(chats.alice, `/start ${code}`, "alice"));
    expect(await receiveTelegramUpdate(w.services, log, again, secret)).toEqual({ status: 200, body: { ok: true, connected: false } });
    expect(textsTo(chats.alice).at(-1)).toMatch(/expired or was already used/);
    for (const who of ["bob", "carol"] as const) expect((await connectTelegram(who)).reply.body).toMatchObject({ connected: true });
    const settings = await notificationSettings(as.alice);
    expect(settings.channels.find((c) => c.channel === "telegram")).toMatchObject({ status: "active", label: "@alice", brokenReason: null });
  });

  it("an expired Telegram code binds nothing", async () => {
    const { link } = await startConnect(as.bob, { channel: "telegram" });
    clock.advance(16 * 60_000);
    const body = JSON.stringify(w.telegram.update(9999, `/start ${new URL(link!).searchParams.get("start")}`));
    expect((await receiveTelegramUpdate(w.services, log, body, secret)).body).toMatchObject({ connected: false });
  });

  it("binds an email address once its 6-digit code comes back; a wrong code is refused", async () => {
    for (const who of ["alice", "bob", "carol"] as const) {
      await startEmail(as[who], { email: emails[who] });
      const mail = w.smtp.mailsTo(emails[who]).at(-1)!;
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
    expect((await refusal(completeSlackInstall(as.alice, { code: w.slack.issueCode(redirect), state: `${state}x`, baseUrl: base }))).code).toBe("INVALID_INPUT");
    expect(await completeSlackInstall(as.alice, { code: w.slack.issueCode(redirect), state, baseUrl: base })).toEqual({ teamId: w.slack.teamId });
    const [stored] = await query<{ bot_token_enc: string }>(w.services.db, sql`select bot_token_enc from notify_slack_installs where org_id = ${w.org.orgId}`);
    expect(stored!.bot_token_enc).not.toContain(w.slack.botToken);

    const now = Math.floor(clock.now().getTime() / 1000);
    for (const who of ["alice", "bob", "carol"] as const) {
      const { code } = await startConnect(as[who], { channel: "slack" });
      const stale = w.slack.slashCommand(slackUsers[who], `connect ${code}`, { timestamp: now - 301 });
      expect((await receiveSlackCommand(w.services, log, stale.body, new Headers(stale.headers))).status).toBe(401);
      const forged = w.slack.slashCommand(slackUsers[who], `connect ${code}`, { timestamp: now, secret: "not-the-secret" });
      expect((await receiveSlackCommand(w.services, log, forged.body, new Headers(forged.headers))).status).toBe(401);
      const good = w.slack.slashCommand(slackUsers[who], `connect ${code}`, { timestamp: now });
      const tampered = { ...good, body: good.body.replace(slackUsers[who], "UEVIL") };
      expect((await receiveSlackCommand(w.services, log, tampered.body, new Headers(tampered.headers))).status).toBe(401);
      expect(await receiveSlackCommand(w.services, log, good.body, new Headers(good.headers))).toEqual({ status: 200, body: { response_type: "ephemeral", text: expect.stringContaining("Connected") } });
      // The same signed request again is a replay; a new one with the spent code binds nothing.
      expect((await receiveSlackCommand(w.services, log, good.body, new Headers(good.headers))).status).toBe(401);
      const later = w.slack.slashCommand(slackUsers[who], ` connect  ${code}`, { timestamp: now });
      expect((await receiveSlackCommand(w.services, log, later.body, new Headers(later.headers))).body).toMatchObject({ text: expect.stringContaining("expired or was already used") });
    }
    expect((await notificationSettings(as.bob)).channels.find((c) => c.channel === "slack")).toMatchObject({ status: "active", label: `Slack user ${slackUsers.bob}` });
  });

  it("Discord: /connect <code> signed with the application's Ed25519 key binds the DM channel; a forged, stale or replayed interaction is refused", async () => {
    const now = Math.floor(clock.now().getTime() / 1000);
    const ping = w.discord.interaction({ type: 1 }, { timestamp: now });
    expect(await receiveDiscordInteraction(w.services, log, ping.body, new Headers(ping.headers))).toEqual({ status: 200, body: { type: 1 } });
    for (const who of ["alice", "bob", "carol"] as const) {
      const { code } = await startConnect(as[who], { channel: "discord" });
      const command = w.discord.connectCommand(discordUsers[who], code);
      const forged = w.discord.interaction(command, { timestamp: now, forge: true });
      expect((await receiveDiscordInteraction(w.services, log, forged.body, new Headers(forged.headers))).status).toBe(401);
      const stale = w.discord.interaction(command, { timestamp: now - 600 });
      expect((await receiveDiscordInteraction(w.services, log, stale.body, new Headers(stale.headers))).status).toBe(401);
      const good = w.discord.interaction(command, { timestamp: now });
      expect((await receiveDiscordInteraction(w.services, log, good.body.replace(code, `${code}x`), new Headers(good.headers))).status).toBe(401);
      expect(await receiveDiscordInteraction(w.services, log, good.body, new Headers(good.headers))).toEqual({
        status: 200,
        body: { type: 4, data: { content: expect.stringContaining("Connected"), flags: 64 } },
      });
      expect((await receiveDiscordInteraction(w.services, log, good.body, new Headers(good.headers))).status).toBe(401);
    }
    expect((await notificationSettings(as.carol)).channels.find((c) => c.channel === "discord")).toMatchObject({ status: "active" });
  });
});
