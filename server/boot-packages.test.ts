import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, expect, it } from "vitest";
import { startApp, type AppProcess } from "./testing/app-process.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "./testing/db.ts";

/**
 * The clients of outside services load on their first use, not when the app starts (decision
 * 115): each is hundreds of files, and together they were a third of the start's CPU. The app is
 * started with a hook that writes down every package it imports.
 */
const onFirstUseOnly = ["jira.js", "@linear/sdk", "stripe", "@discordjs/rest", "discord-api-types", "@slack/web-api", "grammy", "nodemailer", "@gitbeaker/rest", "bullmq", "undici", "ioredis"];

let app: AppProcess | undefined;
let database: TestDatabase | undefined;
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-packages-"));
afterAll(async () => {
  await app?.stop();
  await database?.close();
  fs.rmSync(logDir, { recursive: true, force: true });
});

it("starts without loading any client of an outside service", async () => {
  const log = path.join(logDir, "imported.txt");
  database = testDriver === "postgres" ? await createTestDatabase({ max: 1 }) : undefined;
  app = await startApp({
    ...(database ? { DATABASE_URL: database.url! } : {}),
    NODE_OPTIONS: `--import ${JSON.stringify(pathToFileURL(path.join(import.meta.dirname, "testing/package-log.mjs")).href)}`,
    RETASC_PACKAGE_LOG: log,
  });
  expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
  const imported = new Set(fs.readFileSync(log, "utf8").split("\n"));
  // The hook works: what every start needs is there.
  expect(imported).toContain("better-auth");
  expect(imported).toContain("drizzle-orm");
  // A package or any path inside it (`stripe/esm/…`), imported or required.
  const loadedAtStart = onFirstUseOnly.filter((name) => [...imported].some((specifier) => specifier === name || specifier.startsWith(`${name}/`)));
  expect(loadedAtStart).toEqual([]);
});
