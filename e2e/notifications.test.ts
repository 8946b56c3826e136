import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startFakeDiscord, type FakeDiscord } from "../test/fakes/discord.ts";
import { startFakeSlack, type FakeSlack } from "../test/fakes/slack.ts";
import { startFakeSmtp, type FakeSmtp } from "../test/fakes/smtp.ts";
import { startFakeTelegram, type FakeTelegram } from "../test/fakes/telegram.ts";
import { launchBrowser, removeTemps, signUp, startE2eApp, type E2eApp, type Person } from "./harness.ts";
import { notifyEnv } from "../server/testing/notify-env.ts";

/**
 * A person connects every channel from the Dash's Notifications page in Chromium, the bots'
 * side played by signed requests to the app's webhooks (as Telegram, Slack and Discord send
 * them) and local fakes of their APIs and of an SMTP server; then mutes a kind and sends a test.
 */
const secret = "e2e-telegram-secret";
let app: E2eApp;
let browser: Browser;
let ada: Person;
let telegram: FakeTelegram;
let slack: FakeSlack;
let discord: FakeDiscord;
let smtp: FakeSmtp;

beforeAll(async () => {
  [telegram, slack, discord, smtp] = await Promise.all([startFakeTelegram(), startFakeSlack(), startFakeDiscord(), startFakeSmtp()]);
  [app, browser] = await Promise.all([
    startE2eApp({
      ...notifyEnv({ telegram, slack, discord, smtp }, { telegramSecret: secret, botUsername: "retasc_e2e_bot" }),
      SLACK_OAUTH_URL: `${slack.url}/oauth/v2/authorize`,
      OUTBOX_POLL_MS: "200",
      // On PostgreSQL (the server mode) jobs run where asked: here, in the web process.
      RETASC_WORKERS: "inline",
    }),
    launchBrowser(),
  ]);
  ada = await signUp(browser, app, "Ada");
  await ada.page.getByLabel("Org name").fill("Analytical");
  await ada.page.getByRole("button", { name: "Create org" }).click();
  await ada.page.waitForURL(/\/dash\/settings\/projects$/);
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await Promise.all([telegram?.close(), slack?.close(), discord?.close(), smtp?.close()]);
  removeTemps();
  expect(slack?.problems ?? []).toEqual([]);
  expect(discord?.problems ?? []).toEqual([]);
});

const post = (path: string, body: string, headers: Record<string, string>) => fetch(`${app.url}${path}`, { method: "POST", body, headers });

test("connects Telegram, email, Slack and Discord from the page; forged requests bind nothing; a mute sticks; Send test arrives", async () => {
  const page = ada.page;
  await page.getByRole("navigation", { name: "Dash" }).getByRole("link", { name: "Notifications" }).click();
  await page.waitForURL(/\/dash\/settings\/notifications$/);
  const card = (channel: string) => page.locator(`[data-channel="${channel}"]`);

  // Telegram: the deep link, then Telegram delivers /start <code> to the webhook with the secret.
  await card("telegram").getByRole("button", { name: "Connect Telegram" }).click();
  const link = await card("telegram").getByRole("link", { name: /t\.me/ }).getAttribute("href");
  expect(link).toMatch(/^https:\/\/t\.me\/retasc_e2e_bot\?start=/);
  const update = JSON.stringify(telegram.update(4242, `/start ${new URL(link!).searchParams.get("start")}`, "ada_l"));
  expect((await post("/webhooks/telegram", update, { "content-type": "application/json", "x-telegram-bot-api-secret-token": "forged" })).status).toBe(401);
  expect((await post("/webhooks/telegram", update, { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret })).status).toBe(200);
  await page.reload();
  await expect.poll(() => card("telegram").innerText()).toContain("Connected as @ada_l");

  // Email: the 6-digit code from the mail.
  await card("email").getByLabel("Email address").fill(ada.email);
  await card("email").getByRole("button", { name: "Send code" }).click();
  await expect.poll(() => smtp.mailsTo(ada.email).length).toBe(1);
  const code = smtp.mailsTo(ada.email)[0]!.subject.match(/\d{6}/)![0];
  await card("email").getByLabel("6-digit code").fill(code);
  await card("email").getByRole("button", { name: "Confirm" }).click();
  await expect.poll(() => card("email").innerText()).toContain(`Connected as ${ada.email}`);

  // Slack: the owner adds the app (OAuth v2 through the fake consent page), then /retasc connect <code>.
  await card("slack").getByRole("button", { name: "Add the app to Slack" }).click();
  await page.waitForURL(/\/dash\/settings\/notifications\?slack=installed$/);
  await card("slack").getByRole("button", { name: "Connect Slack" }).click();
  const slackCommand = (await card("slack").locator("code").innerText()).trim();
  expect(slackCommand).toMatch(/^\/retasc connect \S+$/);
  const stale = slack.slashCommand("UADA", slackCommand.replace("/retasc ", ""), { timestamp: Math.floor(Date.now() / 1000) - 600 });
  expect((await post("/webhooks/slack", stale.body, stale.headers)).status).toBe(401);
  const command = slack.slashCommand("UADA", slackCommand.replace("/retasc ", ""));
  const answer = await post("/webhooks/slack", command.body, command.headers);
  expect(await answer.json()).toMatchObject({ response_type: "ephemeral", text: expect.stringContaining("Connected") });
  await page.reload();
  await expect.poll(() => card("slack").innerText()).toContain("Connected as Slack user UADA");

  // Discord: /connect <code>, signed with the application's key.
  await card("discord").getByRole("button", { name: "Connect Discord" }).click();
  const discordCode = (await card("discord").locator("code").innerText()).trim().replace(/^\/connect /, "");
  const interaction = discord.connectCommand("31337", discordCode);
  const forged = discord.interaction(interaction, { forge: true });
  expect((await post("/webhooks/discord", forged.body, forged.headers)).status).toBe(401);
  const signed = discord.interaction(interaction);
  expect((await (await post("/webhooks/discord", signed.body, signed.headers)).json()).data.content).toContain("Connected");
  await page.reload();
  await expect.poll(() => card("discord").innerText()).toContain("Connected as Discord user 31337");

  // A mute, kept across a reload.
  await page.getByRole("button", { name: "Mute: An issue you wrote is done" }).click();
  await expect.poll(() => page.getByRole("button", { name: "Unmute: An issue you wrote is done" }).count()).toBe(1);
  await page.reload();
  await expect.poll(() => page.getByRole("button", { name: "Unmute: An issue you wrote is done" }).count()).toBe(1);

  // Send test: through the outbox and the worker to each fake. Each form's answer is waited for: a
  // form posted while another is in flight cancels that one in the browser (React Router), sent or not.
  for (const [channel, name] of [["telegram", "Telegram"], ["email", "Email"], ["slack", "Slack"], ["discord", "Discord"]]) {
    await card(channel).getByRole("button", { name: "Send test" }).click();
    await expect.poll(() => page.getByText(`A test message is on its way to ${name}`).count()).toBe(1);
  }
  await expect.poll(() => telegram.messagesTo(4242).filter((m) => String(m.body.text).includes("Retasc test message")).length, { timeout: 15_000 }).toBe(1);
  await expect.poll(() => smtp.mailsTo(ada.email).filter((m) => m.subject.includes("Retasc test message")).length, { timeout: 15_000 }).toBe(1);
  await expect.poll(() => slack.messagesTo("UADA").length, { timeout: 15_000 }).toBe(1);
  await expect.poll(() => discord.messagesTo("31337").length, { timeout: 15_000 }).toBe(1);
  await page.reload();
  await expect.poll(() => page.getByText(/test on Telegram: sent/).count()).toBe(1);
});
