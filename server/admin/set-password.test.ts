import { spawn } from "node:child_process";
import crypto from "node:crypto";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { cleanEnv, runEntry, startApp, migratedDataDir, type AppProcess } from "../testing/app-process.ts";

/**
 * `npm run admin -- set-password` as an operator runs it: its own process, the password on
 * stdin (piped, or typed at a terminal), then a sign-in through the running app over HTTP.
 */
const root = path.resolve(import.meta.dirname, "../..");
const email = "owner@example.com";
const piped = "piped pass phrase 1";
const typed = "typed pass phrase 2";

const running: AppProcess[] = [];
let database: TestDatabase | null = null;
afterAll(async () => {
  await Promise.all(running.map((app) => app.stop("SIGKILL")));
  await database?.close();
});

async function start(env: Record<string, string>) {
  // debug: the strictest level, to show the password reaches no log line.
  const app = await startApp({ ...env, LOG_LEVEL: "debug" });
  running.push(app);
  return app;
}

/** Through the endpoint the sign-in page posts to; a session comes back as a cookie. */
async function signIn(app: AppProcess, password: string) {
  // The admin commands run synchronously (spawnSync) and block this process past the server's
  // keep-alive timeout: let the event loop see the server close the idle connection first, or
  // fetch reuses the dead socket ("other side closed").
  await new Promise((resolve) => setTimeout(resolve, 50));
  const response = await fetch(`${app.url}/api/auth/sign-in/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: app.url },
    body: JSON.stringify({ email, password }),
  });
  if (response.status !== 200) return { status: response.status, user: null };
  const cookie = response.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  const session = (await (await fetch(`${app.url}/api/auth/get-session`, { headers: { cookie } })).json()) as { user: { email: string } } | null;
  return { status: response.status, user: session?.user.email ?? null };
}

/** The command at a terminal (a pty from `script`): the password is typed after the prompt. */
function setPasswordAtTerminal(env: Record<string, string>, password: string) {
  const command = `${JSON.stringify(process.execPath)} --import tsx server/admin/main.ts set-password --email ${email} --json`;
  const child = spawn("script", ["-qec", command, "/dev/null"], { cwd: root, env: { ...cleanEnv(), ...env } });
  let transcript = "";
  let answered = false;
  child.stdout.on("data", (data) => {
    transcript += data;
    if (!answered && transcript.includes("new password (not shown): ")) {
      answered = true;
      child.stdin.write(`${password}\r`);
    }
  });
  child.stderr.on("data", (data) => (transcript += data));
  return new Promise<{ code: number | null; transcript: string }>((resolve) => child.on("exit", (code) => resolve({ code, transcript })));
}

it("sets a bootstrapped person's password from stdin; they sign in with it over HTTP, and it is in no output", async () => {
  database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  const env: Record<string, string> = database
    ? { DATABASE_URL: database.url!, RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64"), RETASC_EMAIL_PASSWORD: "on" }
    : { RETASC_DATA_DIR: migratedDataDir() };
  const outputs: string[] = [];
  const admin = (args: string[], input?: string) => {
    const result = runEntry("server/admin/main.ts", args, env, input);
    outputs.push(result.stdout, result.stderr);
    return result;
  };

  const boot = admin(["bootstrap", "--org", "Acme", "--project", "Web", "--prefix", "WEB", "--email", email, "--json"]);
  expect(boot.status, boot.stderr).toBe(0);
  const { userId } = JSON.parse(boot.stdout) as { userId: string };

  let app = await start(env);
  expect((await signIn(app, piped)).status).toBe(401);
  if (!database) {
    // The embedded data dir is the running server's: the command refuses in one line.
    const refused = admin(["set-password", "--email", email], `${piped}\n`);
    expect(refused.status).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain("in use by another Retasc process");
    expect(await app.stop()).toBe(0);
  }

  const unknown = admin(["set-password", "--email", "nobody@example.com"], `${piped}\n`);
  expect(unknown.status).toBe(1);
  expect(unknown.stderr).toMatch(/^✗ NOT_FOUND: person nobody@example.com not found/);
  expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
  const short = admin(["set-password", "--email", email], "short\n");
  expect(short.status).toBe(1);
  expect(short.stderr).toContain("✗ INVALID_INPUT: the password must be 8 to 128 characters");

  const set = admin(["set-password", "--email", email, "--json"], `${piped}\n`);
  expect(set.status, set.stderr).toBe(0);
  expect(JSON.parse(set.stdout)).toEqual({ userId, email, replaced: false, signedOut: false });

  if (!database) app = await start(env);
  expect(await signIn(app, piped)).toEqual({ status: 200, user: email });
  expect((await signIn(app, `${piped}x`)).status).toBe(401);

  // Replaced from a terminal: the typed password is not echoed, and only it works afterwards.
  if (!database) expect(await app.stop()).toBe(0);
  const tty = await setPasswordAtTerminal(env, typed);
  outputs.push(tty.transcript);
  expect(tty.code, tty.transcript).toBe(0);
  expect(tty.transcript).toContain(`"replaced":true`);
  if (!database) app = await start(env);
  expect(await signIn(app, typed)).toEqual({ status: 200, user: email });
  expect((await signIn(app, piped)).status).toBe(401);

  for (const app of running) outputs.push(app.output());
  for (const output of outputs) {
    expect(output).not.toContain(piped);
    expect(output).not.toContain(typed);
  }
});
