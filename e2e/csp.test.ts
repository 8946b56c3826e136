import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { watchConsole } from "./dash-fixture.ts";
import { launchBrowser, removeTemps, signUp, startE2eApp, type E2eApp } from "./harness.ts";

/**
 * Pages hydrate under the Content-Security-Policy (server/http/headers.ts): React Router's
 * inline scripts carry the response's nonce, so Chromium runs them, client-side navigation and
 * forms work, and nothing is reported as a policy violation. And no page can be framed.
 */
let app: E2eApp;
let browser: Browser;
beforeAll(async () => {
  app = await startE2eApp();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  removeTemps();
});

test("the sign-in page hydrates: a link navigates without a reload, the sign-up form submits, no CSP violation", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const { errors } = watchConsole(page);
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { cspViolations: string[] }).cspViolations = seen;
    document.addEventListener("securitypolicyviolation", (event) => seen.push(`${event.violatedDirective} ${event.blockedURI}`));
  });
  const response = await page.goto(`${app.url}/auth/sign-in`);
  expect(response?.headers()["content-security-policy"]).toMatch(/script-src 'self' 'nonce-/);
  await page.evaluate(() => ((window as unknown as { sameDocument: number }).sameDocument = 1));
  await page.getByRole("link", { name: /create one|sign up/i }).click();
  await page.waitForURL(/\/auth\/sign-up/);
  // Only a hydrated app navigates client-side; a full load would have dropped the mark.
  expect(await page.evaluate(() => (window as unknown as { sameDocument?: number }).sameDocument)).toBe(1);
  expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
  expect(errors).toEqual([]);
  await context.close();

  // Signing up (the form, its redirect into the Dash) works too.
  const person = await signUp(browser, app, "Csp");
  expect(person.page.url()).toMatch(/\/dash\/orgs\/new$/);
  await person.page.context().close();
});

test("a page framed by another site is blocked", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.setContent(`<iframe id="f" src="${app.url}/device"></iframe>`);
  await page.waitForTimeout(1_500);
  const frame = page.frames().find((f) => f.url().startsWith(app.url));
  // Chromium replaces a refused frame's document with an error page it does not let us into.
  const framed = frame ? await frame.evaluate(() => document.body?.innerText ?? "").catch(() => "") : "";
  expect(framed).not.toMatch(/code|device|sign in/i);
  await context.close();
});
