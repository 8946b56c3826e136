import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Browser, Page } from "playwright-core";
import { expect } from "vitest";
import { createTestDatabase, type TestDatabase } from "../server/testing/db.ts";
import { Keyring } from "../server/crypto/index.ts";
import { connectClient } from "../server/mcp/testing.ts";
import { createOrg, createProject, ensureUser, mintAgentKey } from "../server/orgs/index.ts";
import { seedOwnedOrg } from "../server/testing/dash.ts";
import { startApp, type AppProcess } from "../server/testing/app-process.ts";
import { launchBrowser, signUp, type E2eApp, type Person } from "./harness.ts";

/**
 * The Dash's end-to-end setting: two instances of the built app on one PostgreSQL database
 * (events cross between them through LISTEN/NOTIFY, as in the scaled mode):
 * - `main`, where the person watches, with the default 30-minute lease;
 * - `brief`, whose claims lapse after 3 s and which runs the reclaim sweep every 250 ms.
 * A person signs up in Chromium; their org, project and agent keys are seeded straight
 * into the database (the settings pages that do this are tested elsewhere).
 */
export const artifactsDir = path.resolve(import.meta.dirname, "artifacts");
export const BRIEF_LEASE_SECONDS = 3;

export interface DashWorld {
  main: AppProcess;
  brief: AppProcess;
  database: TestDatabase;
  browser: Browser;
  owner: Person;
  prefix: string;
  /** Agent keys of the owner, by runtime. */
  keys: Record<"claude-code" | "codex", string>;
  /** An MCP client for a runtime on one of the instances. */
  agent(runtime: "claude-code" | "codex", on?: "main" | "brief"): Promise<Client>;
  /** An org the owner does not belong to, with one issue `OTH-1`. */
  otherOrgIssue: string;
  close(): Promise<void>;
}

export async function startDashWorld(): Promise<DashWorld> {
  const database = await createTestDatabase({ max: 4 });
  const masterKey = crypto.randomBytes(32).toString("base64");
  const common = { DATABASE_URL: database.url!, RETASC_MASTER_KEY: masterKey, RETASC_EMAIL_PASSWORD: "on" };
  const [main, brief, browser] = await Promise.all([
    startApp({ ...common, RETASC_WORKERS: "off" }),
    startApp({ ...common, LEASE_TTL_SECONDS: String(BRIEF_LEASE_SECONDS), RECLAIM_SWEEP_MS: "250", RETASC_WORKERS: "inline" }),
    launchBrowser(),
  ]);
  const watched: E2eApp = {
    url: main.url,
    expireInvites: () => Promise.reject(new Error("not used by the Dash tests")),
    close: () => main.stop().then(() => {}),
  };
  const owner = await signUp(browser, watched, "Olive");

  const { db } = database.database;
  const keyring = new Keyring(Buffer.from(masterKey, "base64"));
  const prefix = "RTSC";
  const { keys } = await seedOwnedOrg(db, keyring, { ownerEmail: owner.email, orgName: "Northwind", prefix, runtimes: ["claude-code", "codex"] });
  // Someone else's org, to prove the Dash never shows it.
  const stranger = await ensureUser(db, `stranger-${crypto.randomBytes(3).toString("hex")}@example.com`, "Stranger");
  const otherOrg = await createOrg({ keyring }, db, { name: "Elsewhere", ownerUserId: stranger });
  const otherProject = await createProject(db, { orgId: otherOrg, name: "Secret", prefix: "OTH" });
  const strangerKey = (await mintAgentKey(db, { orgId: otherOrg, userId: stranger, projectId: otherProject.id, runtime: "codex" })).key;

  const clients: Client[] = [];
  const agent = async (runtime: "claude-code" | "codex", on: "main" | "brief" = "main") => {
    const client = await connectClient(`${(on === "main" ? main : brief).url}/mcp`, keys[runtime], { name: runtime });
    clients.push(client);
    return client;
  };
  const strangerAgent = await connectClient(`${main.url}/mcp`, strangerKey);
  clients.push(strangerAgent);
  const secret = await strangerAgent.callTool({ name: "save_issue", arguments: { title: "Their secret plan", work: true, changeType: "feat", noDependency: "alone" } });
  const otherOrgIssue = (secret.structuredContent as { identifier: string }).identifier;

  return {
    main,
    brief,
    database,
    browser,
    owner,
    prefix,
    keys,
    agent,
    otherOrgIssue,
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await browser.close();
      await Promise.all([main.stop(), brief.stop()]);
      await database.close();
    },
  };
}

/**
 * Collects what would show in the browser console as an error (console.error, uncaught
 * exceptions, failed requests such as a hydration or asset problem) for one page.
 */
export function watchConsole(page: Page): { errors: string[] } {
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()} @ ${message.location().url}`);
  });
  page.on("pageerror", (error) => errors.push(`page error: ${error.message}`));
  page.on("requestfailed", (request) => {
    // A page that navigates away cancels its own event stream and pending fetches: not an error.
    if (request.failure()?.errorText === "net::ERR_ABORTED") return;
    errors.push(`request failed: ${request.url()} ${request.failure()?.errorText}`);
  });
  return { errors };
}

/**
 * A full-page screenshot into e2e/artifacts/ for a person to look at, when RETASC_E2E_SCREENSHOTS=1:
 * no test reads them, and encoding them cost CI time on every run (decision 086). Returns the file it
 * wrote, or null.
 */
export async function screenshot(page: Page, name: string): Promise<string | null> {
  if (process.env.RETASC_E2E_SCREENSHOTS !== "1") return null;
  fs.mkdirSync(artifactsDir, { recursive: true });
  const file = path.join(artifactsDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** A screenshot at a phone's width (see screenshot); fails if the page scrolls sideways there. Restores the laptop size. */
export async function phoneScreenshot(page: Page, name: string): Promise<string | null> {
  const before = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, `${name}: the page is wider than a phone`).toBeLessThanOrEqual(0);
    return await screenshot(page, name);
  } finally {
    if (before) await page.setViewportSize(before);
  }
}

/** Polls until the assertion holds (playwright-core has no locator assertions of its own). */
export const eventually = <T>(read: () => Promise<T>, timeout = 5_000) => expect.poll(read, { timeout, interval: 50 });
