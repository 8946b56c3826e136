import fs from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { githubDelivery } from "../server/testing/fake-github.ts";
import { launchBrowser, removeTemps, signUp, startE2eApp, type E2eApp, type Person } from "./harness.ts";

/**
 * An owner connects a GitHub repository from the Dash's Connectors page in Chromium, copies the
 * webhook URL and secret shown once, and GitHub's side is played by deliveries signed with that
 * secret as GitHub signs them (X-Hub-Signature-256): the ping turns the card Connected, and a
 * collaborator's issues.opened shows in the queue.
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
  [app, browser] = await Promise.all([startE2eApp({ OUTBOX_POLL_MS: "200", RETASC_WORKERS: "inline" }), launchBrowser()]);
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

test("Connect shows the webhook once; GitHub's signed ping turns it Connected; a collaborator's issue reaches the queue", async () => {
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

  const opened = github("issues", "opened");
  Object.assign(opened.issue, { id: 4_242_001, number: 12, title: "Boiler pressure gauge reads high", author_association: "COLLABORATOR" });
  const delivered = await fetch(await githubDelivery(hook, secret, "issues", opened));
  expect(delivered.status).toBe(202);
  await expect
    .poll(
      async () => {
        await page.goto(`${app.url}/dash/queue`);
        return page.getByText("Boiler pressure gauge reads high").count();
      },
      { timeout: 20_000, interval: 500 },
    )
    .toBe(1);
});
