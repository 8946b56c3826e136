import { spawn, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { chromium, type Browser, type Page } from "playwright-core";
import { sql } from "drizzle-orm";
import { openPglite, query } from "../db/client.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../server/testing/db.ts";
import { migratedDataDir, startApp, tempDataDir, type AppProcess } from "../server/testing/app-process.ts";
import { folderLaunch } from "../server/testing/mcp-marker.ts";
import { gitRepo, removeTemps, tempDir } from "../server/testing/temp-dirs.ts";

/**
 * End-to-end helpers: the built app as its own process (embedded PGlite in a temp data
 * dir, or its own PostgreSQL database when TEST_DATABASE_URL is set), Debian's Chromium
 * through playwright-core, and the `retasc` CLI run exactly as npm installed it.
 */
const root = path.resolve(import.meta.dirname, "..");
export const retascBin = path.join(root, "node_modules/.bin/retasc");

export { gitRepo, removeTemps, tempDir };

export interface E2eApp {
  url: string;
  /** Simulates time passing for invites: every pending invite is now past its expiry. */
  expireInvites(): Promise<void>;
  close(): Promise<void>;
}

/** `extraEnv`: more configuration for the app (outside services' fakes). */
export async function startE2eApp(extraEnv: Record<string, string> = {}): Promise<E2eApp> {
  const database: TestDatabase | null = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  const dataDir = database ? tempDataDir() : migratedDataDir();
  const env: Record<string, string> = database
    ? { DATABASE_URL: database.url!, RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64"), RETASC_EMAIL_PASSWORD: "on" }
    : { RETASC_DATA_DIR: dataDir };
  Object.assign(env, extraEnv);
  let app: AppProcess = await startApp(env);
  const expire = sql`update invites set expires_at = now() - interval '1 minute' where accepted_at is null and revoked_at is null`;
  return {
    url: app.url,
    async expireInvites() {
      if (database) {
        await query(database.database.db, expire);
        return;
      }
      // PGlite is held by the app: stop it, move time on in the data, start it on the same port.
      const port = app.port;
      await app.stop();
      const pglite = await openPglite(path.join(dataDir, "pgdata"));
      await query(pglite.db, expire);
      await pglite.close();
      app = await startApp(env, { port });
    },
    async close() {
      await app.stop();
      await database?.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** A person in their own browser context and their own ~/.retasc. */
export interface Person {
  name: string;
  email: string;
  page: Page;
  retascDir: string;
}

export async function signUp(browser: Browser, app: E2eApp, name: string): Promise<Person> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const email = `${name.toLowerCase()}-${crypto.randomBytes(3).toString("hex")}@example.com`;
  await page.goto(`${app.url}/auth/sign-up`);
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("correct horse battery staple");
  await page.getByRole("button", { name: "Create account" }).click();
  // A new person has no org yet: the Dash sends them to create one.
  await page.waitForURL(/\/dash\/orgs\/new$/);
  const retascDir = tempDir("retasc-home-");
  return { name, email, page, retascDir };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI's environment for `person`: their keystore, no key or server from this process's. */
export function cliEnv(person: { retascDir: string }, extra: Record<string, string> = {}) {
  const env: Record<string, string | undefined> = { ...process.env, RETASC_DIR: person.retascDir, ...extra };
  for (const name of ["RETASC_MCP_KEY", "RETASC_WORKSPACE", "RETASC_DEPLOYMENT_URL", "RETASC_MCP_URL"]) if (!(name in extra)) delete env[name];
  return env;
}

/** Runs `retasc …` to completion. */
export function retasc(person: { retascDir: string }, args: string[], options: { cwd?: string; env?: Record<string, string>; bin?: string } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(options.bin ?? retascBin, args, { cwd: options.cwd ?? root, env: cliEnv(person, options.env) });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * `retasc login`, approved by the person in their browser through /device: the test reads
 * the URL and code the CLI prints, checks the page shows the same code, and approves.
 */
export async function loginThroughDevice(person: Person, app: E2eApp, options: { bin?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  const child = spawn(options.bin ?? retascBin, ["login", "--url", app.url], { cwd: root, env: cliEnv(person, options.env) });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  const exited = new Promise<CliResult>((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
  const printed = await new Promise<{ url: string; code: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`retasc login printed no URL:\n${stderr}`)), 30_000);
    child.stderr.on("data", (d) => {
      stderr += d;
      const url = /Open: (\S+)/.exec(stderr)?.[1];
      const code = /Enter code: (\S+)/.exec(stderr)?.[1];
      if (url && code) {
        clearTimeout(timer);
        resolve({ url, code });
      }
    });
  });
  await person.page.goto(printed.url);
  const shown = await person.page.getByTestId("user-code").textContent();
  if (shown?.trim() !== printed.code.replace("-", "")) throw new Error(`the page shows ${shown}, the CLI printed ${printed.code}`);
  await person.page.getByRole("button", { name: "Approve" }).click();
  await person.page.getByText("Approved.").waitFor();
  return exited;
}


export async function mcp(endpoint: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "e2e", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers } }));
  return client;
}

/**
 * The MCP client of a bound folder, connected as Claude Code would from its .mcp.json: the
 * `retasc mcp proxy` it runs (this workspace's CLI for the npx form: server/testing/mcp-marker.ts),
 * or its URL with the headers its helper prints.
 */
export async function connectAsFolder(person: { retascDir: string }, folder: string, extraEnv: Record<string, string> = {}): Promise<Client> {
  const server = folderLaunch(folder, retascBin) as ReturnType<typeof folderLaunch> & { url: string; headersHelper: string };
  const env = { ...cliEnv(person), PATH: `${path.dirname(retascBin)}${path.delimiter}${process.env.PATH}`, ...extraEnv } as Record<string, string>;
  if (server.type === "stdio") {
    const client = new Client({ name: "e2e", version: "1.0.0" });
    await client.connect(new StdioClientTransport({ command: server.command, args: server.args, cwd: folder, env, stderr: "pipe" }));
    return client;
  }
  const helper = spawnSync(server.headersHelper, { shell: true, cwd: folder, encoding: "utf8", env });
  if (helper.status !== 0) throw new Error(`the headers helper failed: ${helper.stderr}`);
  return mcp(server.url, JSON.parse(helper.stdout));
}

/** Calls a tool; returns structuredContent, or `{ error }` for a refusal. */
export async function tool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  return result.structuredContent;
}
