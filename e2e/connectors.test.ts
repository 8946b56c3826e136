import fs from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { githubDelivery } from "../test/fakes/github.ts";
import { launchBrowser, removeTemps, signUp, startE2eApp, type E2eApp, type Person } from "./harness.ts";

/**
 * An owner connects a GitHub repository from the Dash's Connectors page in Chromium, copies the
 * webhook URL and secret shown once, and GitHub's side is played by deliveries signed with that
 * secret as GitHub signs them (X-Hub-Signature-256): the ping turns the card Connected, and a
 * collaborator's issues.opened shows in the queue within 2 s, an outsider's too, awaiting
 * triage, its text held from agents, and a person accepts it on its page after reading it.
 */
const examples = JSON.parse(fs.readFileSync(path.resolve("node_modules/@octokit/webhooks-examples/api.github.com/index.json"), "utf8")) as {
  name: string;
  examples: Record<string, any>[];
}[];
const github = (event: string, action?: string) => structuredClone(examples.find((e) => e.name === event)!.examples.find((x) => action === undefined || x.action === action)!);

let app: E2eApp;
let browser: Browser;
let ada: Person;

beforeAll(async () => {
  [app, browser] = await Promise.all([startE2eApp({ RETASC_WORKERS: "inline" }), launchBrowser()]);
  ada = await signUp(browser, app, "Ada");
  await ada.page.getByLabel("Org name").fill("Analytical");
  await ada.page.getByRole("button", { name: "Create org" }).click();
  await ada.page.waitForURL(/\/dash\/settings\/projects$/);
  await ada.page.getByLabel("Name", { exact: true }).fill("Engine");
  await ada.page.getByLabel("Prefix", { exact: true }).fill("ENG");
  await ada.page.getByRole("button", { name: "Create project" }).click();
  await ada.page.getByText("Created project ENG.").waitFor({ timeout: 10_000 }).catch(async (error) => {
    throw new Error(`${error}\n${await ada.page.locator("main").innerText()}`);
  });
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  removeTemps();
});

test("Connect shows the webhook once; GitHub's signed ping turns it Connected; a collaborator's and an outsider's issues reach the queue within 2 s; a person accepts the outsider's after reading it", async () => {
  const page = ada.page;
  await page.getByRole("navigation", { name: "Dash" }).getByRole("link", { name: "Connectors" }).click();
  await page.waitForURL(/\/dash\/settings\/connectors$/);
  await page.getByText("No connectors yet.").waitFor();

  await page.getByLabel("Provider", { exact: true }).selectOption("github");
  await page.getByLabel("Repository", { exact: true }).fill("octo-org/engine");
  await page.getByLabel("Project", { exact: true }).selectOption("ENG");
  await page.getByRole("button", { name: "Connect", exact: true }).click();
  const shown = page.getByTestId("new-connector");
  await shown.waitFor();
  const webhookUrl = (await shown.getByLabel("Webhook URL", { exact: true }).innerText()).trim();
  const secret = (await shown.getByLabel("Secret", { exact: true }).innerText()).trim();
  expect(webhookUrl).toMatch(/\/webhooks\/github\/[0-9a-f-]{36}$/);
  expect(secret.length).toBeGreaterThanOrEqual(32);
  const card = page.getByRole("region", { name: "GitHub octo-org/engine" });
  await expect.poll(() => card.getByTestId("connector-status").innerText()).toContain("Pending");

  // The URL is on PUBLIC_URL; this test reaches the same path on the app's own address.
  const hook = `${app.url}${new URL(webhookUrl).pathname}`;
  const forged = await fetch(await githubDelivery(hook, "not-the-secret", "ping", github("ping")));
  expect(forged.status).toBe(401);
  await page.reload();
  await expect.poll(() => card.getByTestId("connector-status").innerText()).toContain("Pending");

  const ping = await fetch(await githubDelivery(hook, secret, "ping", github("ping")));
  expect(ping.status).toBe(202);
  await page.reload();
  await expect.poll(() => card.getByTestId("connector-status").innerText()).toBe("Connected");
  // The secret was shown once: the reloaded page has no trace of it.
  expect(await page.getByTestId("new-connector").count()).toBe(0);
  expect(await page.content()).not.toContain(secret);

  // One delivery each, timed from the POST to the queue entry on the Dash, with the outbox's
  // default 5 s poll: the commit's NOTIFY is what wakes the workers.
  const queued = async (title: string, association: string, id: number, listedAs = title) => {
    const opened = github("issues", "opened");
    Object.assign(opened.issue, { id, number: id % 1000, title, author_association: association });
    const started = Date.now();
    const delivered = await fetch(await githubDelivery(hook, secret, "issues", opened));
    expect(delivered.status).toBe(202);
    for (;;) {
      const queue = await (await page.request.get(`${app.url}/dash/queue`)).text();
      if (queue.includes(listedAs)) return Date.now() - started;
      if (Date.now() - started > 20_000) throw new Error(`${title} never reached the queue`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const collaborator = await queued("Boiler pressure gauge reads high", "COLLABORATOR", 4_242_001);
  expect(collaborator).toBeLessThan(2_000);
  // An outsider's text is held for a person (decision 038): the queue names where it came from.
  const outsider = await queued("Steam whistle too quiet", "NONE", 4_242_002, "Held for triage: GitHub octo-org/engine#2");
  expect(outsider).toBeLessThan(2_000);

  // The outsider's issue awaits triage on its page, its text shown there; a person accepts it there.
  await page.goto(`${app.url}/dash/queue`);
  await page.getByRole("row").filter({ hasText: "Held for triage: GitHub octo-org/engine#2" }).getByRole("link").first().click();
  await page.waitForURL(/\/dash\/issues\/ENG-\d+$/);
  const triage = page.getByTestId("triage");
  await triage.getByText("Awaiting triage").waitFor();
  await triage.getByTestId("held-title").getByText("Steam whistle too quiet").waitFor();
  await triage.getByRole("button", { name: "Accept this text" }).click();
  await page.getByText("Accepted: agents can be handed it now.").waitFor();
  await page.getByRole("heading", { name: /Steam whistle too quiet/ }).waitFor({ timeout: 15_000 });
  // The box goes once the page's data is read again after the action.
  await page.getByTestId("triage").waitFor({ state: "detached", timeout: 15_000 });
});
