import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startApp } from "../../server/testing/app-process.ts";
import { createTestDatabase, testDriver } from "../../server/testing/db.ts";
import { markEmailVerified } from "../../server/testing/verified-email.ts";
import { git, gitRepo, removeTemps, tempDir } from "../../server/testing/temp-dirs.ts";

/**
 * What the CLI's tests run against: the real app as its own process (embedded PGlite, or a
 * PostgreSQL database of its own under RETASC_TEST_DRIVER=postgres), a person who signs up
 * and approves device codes over HTTP as the /device page does, and the `retasc` binary.
 */
export const workspaceBin = path.resolve(import.meta.dirname, "../../node_modules/.bin/retasc");

export { git, gitRepo, removeTemps, tempDir };

export interface Server {
  url: string;
  /** Marks a person's email verified, which no door does for a password sign-up: PostgreSQL only (PGlite lives inside the app), else null. */
  verifyEmail: ((email: string) => Promise<void>) | null;
  close(): Promise<void>;
}

export async function startServer(env: Record<string, string> = {}): Promise<Server> {
  const database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  const app = await startApp({ ...(database ? { DATABASE_URL: database.url!, RETASC_EMAIL_PASSWORD: "on" } : {}), ...env });
  return {
    url: app.url,
    verifyEmail: database ? (email) => markEmailVerified(database, email) : null,
    async close() {
      await app.stop();
      await database?.close();
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A person: a browser session (cookie) on the server and a ~/.retasc of their own. */
export interface Person {
  email: string;
  name: string;
  cookie: string;
  retascDir: string;
  home: string;
}

export async function signUp(server: Server, name: string): Promise<Person> {
  const email = `${name.toLowerCase()}-${crypto.randomBytes(3).toString("hex")}@example.com`;
  const response = await fetch(`${server.url}/api/auth/sign-up/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: server.url },
    body: JSON.stringify({ email, password: "correct horse battery staple", name }),
  });
  if (!response.ok) throw new Error(`sign-up answered ${response.status}: ${await response.text()}`);
  const cookie = response.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  const home = tempDir("retasc-home-");
  return { email, name, cookie, home, retascDir: path.join(home, ".retasc") };
}

/** What a signed-in person does on the /device page: open the code, then approve it. */
export async function approveDevice(server: Server, person: Person, userCode: string): Promise<void> {
  const code = userCode.replace(/[^A-Za-z0-9]/g, "").toUpperCase();
  const page = await fetch(`${server.url}/device?user_code=${code}`, { headers: { cookie: person.cookie }, redirect: "manual" });
  if (!page.ok) throw new Error(`/device answered ${page.status}: ${await page.text()}`);
  const approve = await fetch(`${server.url}/device`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: person.cookie, origin: server.url },
    body: new URLSearchParams({ user_code: code, decision: "approve" }),
  });
  const answer = await approve.text();
  if (!approve.ok || !answer.includes("Approved.")) throw new Error(`approving on /device answered ${approve.status}: ${answer.slice(0, 2000)}`);
}

export interface RunOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  input?: string;
  bin?: string;
}

export function cliEnv(person: { retascDir: string; home?: string }, extra: Record<string, string | undefined> = {}) {
  const env: Record<string, string | undefined> = { ...process.env, RETASC_DIR: person.retascDir, ...(person.home ? { HOME: person.home } : {}) };
  // The harnesses' own relocations too: `bind` runs `retasc setup`, which must find only the temporary HOME's files.
  for (const name of ["RETASC_MCP_KEY", "RETASC_WORKSPACE", "RETASC_DEPLOYMENT_URL", "RETASC_MCP_URL", "NO_COLOR", "FORCE_COLOR", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME"]) delete env[name];
  return { ...env, ...extra };
}

/** Spawns `retasc …` (the workspace's binary unless `bin` says otherwise). */
export function spawnCli(person: { retascDir: string; home?: string }, args: string[], options: RunOptions = {}): ChildProcess {
  return spawn(options.bin ?? workspaceBin, args, { cwd: options.cwd ?? os.tmpdir(), env: cliEnv(person, options.env) });
}

/** Runs `retasc …` to completion. */
export function retasc(person: { retascDir: string; home?: string }, args: string[], options: RunOptions = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawnCli(person, args, options);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => (stdout += d));
    child.stderr!.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin!.end(options.input ?? "");
  });
}

/** `retasc login`, approved over HTTP as soon as it prints its code. */
export async function login(server: Server, person: Person, options: RunOptions = {}): Promise<CliResult> {
  const child = spawnCli(person, ["login", "--url", server.url], options);
  child.stdin!.end();
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  const exited = new Promise<CliResult>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  const code = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`retasc login printed no code:\n${stderr}`)), 30_000);
    child.stderr!.on("data", (d) => {
      stderr += d;
      const printed = /Enter code: (\S+)/.exec(stderr)?.[1];
      if (printed) {
        clearTimeout(timer);
        resolve(printed);
      }
    });
  });
  await approveDevice(server, person, code);
  return exited;
}

/** A person logged in with the CLI, a git repository bound to a new org's project, and an MCP client on /mcp with the folder's key. */
export interface BoundFolder {
  person: Person;
  repo: string;
  client: Client;
}

/**
 * `name` signs up and logs in, binds a fresh git repository (`retasc bind`: org Acme, project
 * Web, prefix WEB), and connects an SDK client to /mcp with the key `retasc mcp key` prints: what
 * the tests of the folder's agent start from. Close `client` in afterAll.
 */
export async function boundFolder(server: Server, name: string): Promise<BoundFolder> {
  const person = await signUp(server, name);
  const loggedIn = await login(server, person);
  if (loggedIn.code !== 0) throw new Error(`retasc login exited ${loggedIn.code}:\n${loggedIn.stderr}`);
  const repo = gitRepo();
  const bind = await retasc(person, ["bind", "--org-name", "Acme", "--project", "Web", "--prefix", "WEB"], { cwd: repo });
  if (bind.code !== 0) throw new Error(`retasc bind exited ${bind.code}:\n${bind.stderr}`);
  const key = (await retasc(person, ["mcp", "key"], { cwd: repo })).stdout.trim();
  const client = new Client({ name: `${name.toLowerCase()}-tests`, version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return { person, repo, client };
}

/** Whether a process is still running. */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
