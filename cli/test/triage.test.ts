import { sign } from "@octokit/webhooks-methods";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { cliEnv, login, removeTemps, retasc, signUp, startServer, tempDir, workspaceBin, type Person, type Server } from "./testing.ts";

/**
 * `retasc triage` against the built app over HTTP (docs/decisions/038): it runs only at a
 * terminal (here a pseudo-terminal from util-linux `script`), lists what came from outside the
 * team, shows the one picked in full with its control characters made visible, and lets exactly
 * that text in when the person types `accept`; `retasc triage WEB-1` goes straight to that issue's text. /api/cli/triage takes a person's session only.
 */
let server: Server;
let person: Person;
let orgId: string;
let hook: string;
let secret: string;

/** The person's CLI session token, as `retasc login` stored it. */
const sessionToken = () => (JSON.parse(fs.readFileSync(path.join(person.retascDir, "config.json"), "utf8")) as { sessions: Record<string, { token: string }> }).sessions[server.url]!.token;
const triageList = async () =>
  (await (await fetch(`${server.url}/api/cli/triage?orgId=${orgId}`, { headers: { authorization: `Bearer ${sessionToken()}` } })).json()) as { issues: { identifier: string; title: string; body: string }[] };

/** Runs `retasc triage` in a pseudo-terminal, typing `input`; answers everything the terminal showed. */
function triageAtTerminal(input: string, ...args: string[]): Promise<{ code: number | null; output: string }> {
  return atTerminal(input, "triage", ...args);
}

/** The CLI's prompts (cli/src/commands/triage.ts, identity.ts): each waits for one line. */
const PROMPT = /Read which one\? |Type "[^"]+" to |Which one is you\? /g;

/** Runs `retasc <args>` in a pseudo-terminal, typing `input`: each line once the next prompt has appeared. */
function atTerminal(input: string, ...args: string[]): Promise<{ code: number | null; output: string }> {
  const command = [workspaceBin, ...args, "--org-id", orgId, "--url", server.url].map((a) => `'${a}'`).join(" ");
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qefc", command, "/dev/null"], { env: cliEnv(person), stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    // One answer a line, each typed when the prompt it answers has appeared; a prompt after the
    // last line is answered by the end of input.
    const lines = input.split("\n");
    let typed = 0;
    const answer = () => {
      const prompts = output.match(PROMPT)?.length ?? 0;
      while (typed < prompts && !child.stdin.writableEnded) {
        if (typed < lines.length) child.stdin.write(`${lines[typed]}\n`);
        else child.stdin.end();
        typed++;
      }
    };
    const read = (d: Buffer) => {
      output += d;
      answer();
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

beforeAll(async () => {
  server = await startServer({ RETASC_WORKERS: "inline" });
  person = await signUp(server, "Tria");
  expect((await login(server, person)).code).toBe(0);
  orgId = (JSON.parse((await retasc(person, ["org", "create", "--name", "Tria's org", "--url", server.url, "--json"])).stdout) as { orgId: string }).orgId;
  expect((await retasc(person, ["project", "create", "--name", "Web", "--prefix", "WEB", "--org-id", orgId, "--url", server.url, "--json"])).code).toBe(0);
  const added = await retasc(person, ["connector", "add", "github", "acme/web", "--project", "WEB", "--org-id", orgId, "--url", server.url]);
  expect(added.code, added.stderr).toBe(0);
  secret = /^(rwh_\S+)$/m.exec(added.stdout)![1]!;
  hook = /Webhook URL: (\S+)/.exec(added.stdout + added.stderr)![1]!;
});
afterAll(async () => {
  await server?.close();
  removeTemps();
});

it("refuses without a terminal; at one, shows the outsider's text in full (escapes visible) and accepts it only when the person types accept", async () => {
  const refused = await retasc(person, ["triage", "--org-id", orgId, "--url", server.url]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("needs a person at a terminal");
  expect((await retasc(person, ["triage", "--approve", "--org-id", orgId, "--url", server.url])).code).toBe(2);

  const body = JSON.stringify({
    action: "opened",
    issue: { id: 4_242_001, number: 42, title: "Add dark mode", body: "Dark mode, please.\u001b[2K\u001b[1Ahidden line", html_url: "https://github.com/acme/web/issues/42", state: "open", user: { login: "stranger" }, author_association: "NONE", labels: [], updated_at: "2030-01-01T00:00:00Z" },
  });
  const delivered = await fetch(hook, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "issues", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": await sign(secret, body) },
    body,
  });
  expect(delivered.status).toBe(202);
  for (let i = 0; (await triageList()).issues.length === 0; i++) {
    if (i > 100) throw new Error("the outsider's issue never came");
    await new Promise((r) => setTimeout(r, 100));
  }
  const [waiting] = (await triageList()).issues;
  expect(waiting).toMatchObject({ identifier: "WEB-1", title: "Add dark mode" });

  // No agent key passes for a session here.
  const key = JSON.parse((await retasc(person, ["key", "mint", "--org-id", orgId, "--url", server.url, "--json"])).stdout) as { key: string };
  expect(key.key).toMatch(/^rtsc_/);
  const withKey = await fetch(`${server.url}/api/cli/triage?orgId=${orgId}`, { headers: { authorization: `Bearer ${key.key}` } });
  expect(withKey.status).toBe(401);

  // Read, then left waiting: anything but the word changes nothing.
  const left = await triageAtTerminal("1\nyes\n");
  expect(left.output).toContain("Dark mode, please.\\u{1b}[2K\\u{1b}[1Ahidden line");
  expect(left.output).not.toContain("\u001b[2K");
  expect(left.output).toContain("Left WEB-1 waiting.");
  expect((await triageList()).issues).toHaveLength(1);

  // Named, the issue's text is shown at once: no list, no number to pick.
  const accepted = await triageAtTerminal("accept\n", "web-1");
  expect(accepted.output).not.toContain("Read which one?");
  expect(accepted.output).toContain("Dark mode, please.");
  expect(accepted.output).toContain("Accepted WEB-1");
  expect((await triageList()).issues).toHaveLength(0);
  const gone = await triageAtTerminal("", "WEB-1");
  expect(gone.output).toContain("NOT_FOUND: nothing of WEB-1 waits for a person");
}, 120_000);

it("identity: refused without a terminal; at one, an imported person with your email is claimed only once you type me, after your email is verified", async () => {
  const refused = await retasc(person, ["identity", "--org-id", orgId, "--url", server.url]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("retasc identity needs a person at a terminal");
  const dir = tempDir("retasc-identity-");
  const file = path.join(dir, "old-board.csv");
  fs.writeFileSync(file, `Title,Assignee\nMigrate the billing cron,${person.email}\n`);
  const imported = await retasc(person, ["import", "csv", "--file", file, "--project", "WEB", "--json", "--org-id", orgId, "--url", server.url, "--poll-ms", "100"]);
  expect(imported.code, imported.stderr).toBe(0);

  // An address signed up with a password is not verified: no placeholder can be theirs yet.
  const unverified = await atTerminal("", "identity");
  expect(unverified.output).toContain("Your email is not verified on this server");
  if (!server.verifyEmail) return; // PGlite lives inside the app: nothing here can verify the email.
  await server.verifyEmail(person.email);

  const declined = await atTerminal("1\nyes\n", "identity");
  expect(declined.output).toContain(`1) ${person.email.split("@")[0]}  from csv`);
  expect(declined.output).toContain("Nothing claimed.");
  const claimed = await atTerminal("1\nme\n", "identity");
  expect(claimed.output).toContain("history is yours now");
  expect((await atTerminal("", "identity")).output).toContain("No imported person in this org carries your email");
}, 120_000);
