import { createRequire } from "node:module";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { generateWorkspace } from "../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../test/fakes/linear.ts";
import { screenshot, watchConsole } from "./dash-fixture.ts";
import { launchBrowser, removeTemps, signUp, startE2eApp, type E2eApp, type Person } from "./harness.ts";

/**
 * An owner imports a Linear team from the Dash in Chromium against the fake Linear API (a
 * 50-issue workspace): paste the key, pick the team, watch the live progress reach the end,
 * and find the team's identifiers in the queue. The page is then checked at 1280 and 390 px
 * for overflow and axe's serious violations. ("That's me" needs a verified email, which this
 * setup cannot give: server/transfer/linear-dash.test.ts covers it.)
 */
const axePath = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
let linear: FakeLinear;
let app: E2eApp;
let browser: Browser;
let ada: Person;

beforeAll(async () => {
  linear = await startFakeLinear({ workspace: generateWorkspace({ issues: 50 }) });
  [app, browser] = await Promise.all([startE2eApp({ OUTBOX_POLL_MS: "200", RETASC_WORKERS: "inline", LINEAR_API_URL: linear.apiUrl }), launchBrowser()]);
  ada = await signUp(browser, app, "Ada");
  await ada.page.getByLabel("Org name").fill("Analytical");
  await ada.page.getByRole("button", { name: "Create org" }).click();
  await ada.page.waitForURL(/\/dash\/settings\/projects$/);
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await linear?.close();
  removeTemps();
});

async function problems(page: Page, width: number, name: string): Promise<string[]> {
  await page.setViewportSize({ width, height: 900 });
  await page.reload();
  await page.waitForLoadState("networkidle").catch(() => {});
  const found: string[] = [];
  const wide = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
  if (wide.scroll > wide.inner) found.push(`${width}: ${wide.scroll} px wide in a ${wide.inner} px window`);
  await page.addScriptTag({ path: axePath });
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    return (await axe.run()).violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.impact} ${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
  });
  for (const v of violations) found.push(`${width}: axe ${v}`);
  await screenshot(page, `linear-import-${name}-${width}`);
  return found;
}

test("paste the key, pick the team, watch the progress reach the end, see ENG issues in the queue", async () => {
  const page = ada.page;
  const { errors } = watchConsole(page);
  await page.goto(`${app.url}/dash/settings/transfer`);
  await page.getByRole("link", { name: "Import from Linear" }).click();
  await page.waitForURL(/\/dash\/settings\/import$/);
  await page.getByLabel("Linear API key").fill(linear.apiKey);
  await page.getByRole("button", { name: "Show teams" }).click();
  await page.getByRole("radio", { name: /ENG · Engineering/ }).check();
  await page.getByLabel("New project's name").fill("Engineering");
  await page.getByRole("button", { name: "Start import" }).click();
  await page.waitForURL(/\/dash\/settings\/import\?run=/);
  const progress = page.getByTestId("import-progress");
  await progress.locator("progress").waitFor();
  // Live: the page reaches the end over the event stream, without a reload.
  await page.getByText(/^Finished /).waitFor({ timeout: 120_000 });
  expect(await page.getByTestId("import-count").innerText()).toBe("50 of 50");
  expect(await progress.locator("progress").getAttribute("value")).toBe("50");
  expect(await page.content()).not.toContain(linear.apiKey);

  await page.getByRole("link", { name: "See the ENG issues" }).click();
  await page.waitForURL(/\/dash\/queue/);
  await expect.poll(async () => (await page.locator("main").innerText()).match(/ENG-\d+/)?.[0] ?? null, { timeout: 10_000 }).not.toBeNull();
  expect(errors).toEqual([]);

  const checked = await browser.newContext({ bypassCSP: true });
  await checked.addCookies(await page.context().cookies());
  const look = await checked.newPage();
  await look.goto(page.url().replace(/\/dash\/queue.*$/, "/dash/settings/import"));
  await look.getByLabel("Linear API key").fill(linear.apiKey);
  await look.getByRole("button", { name: "Show teams" }).click();
  await look.getByText(/last imported/).first().waitFor();
  await look.getByRole("button", { name: "Start import" }).click();
  await look.getByTestId("reimport-warning").waitFor();
  // Into the project the first import made, not a second one.
  expect(await look.getByLabel("Into").locator("option:checked").innerText()).toBe("ENG · Engineering (an earlier import of ENG)");
  const found: string[] = [];
  for (const width of [1280, 390]) {
    await look.setViewportSize({ width, height: 900 });
    await screenshot(look, `linear-import-warning-${width}`);
  }
  for (const width of [1280, 390]) found.push(...(await problems(look, width, "page")));
  expect(found).toEqual([]);
  await checked.close();
}, 240_000);
