import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateJiraProject, startFakeJira, type FakeJira } from "../../test/fakes/jira.ts";
import { login, retasc, signUp, startServer, type Person, type Server } from "./testing.ts";

/**
 * `retasc import jira` and `retasc import csv` against the built app over HTTP and a local Jira:
 * the token from standard input (never a flag, never printed), a dry run that writes nothing,
 * progress until done, identifiers kept (Jira) or the project's next numbers (CSV).
 */
let server: Server;
let jira: FakeJira;
let person: Person;
let orgId: string;
let dir: string;

beforeAll(async () => {
  jira = await startFakeJira({ project: generateJiraProject({ issues: 80, key: "JCL" }) });
  server = await startServer({ RETASC_IMPORT_ALLOW_HOSTS: new URL(jira.url).host, RETASC_WORKERS: "inline", OUTBOX_POLL_MS: "200" });
  person = await signUp(server, "Jia");
  expect((await login(server, person)).code).toBe(0);
  orgId = (JSON.parse((await retasc(person, ["org", "create", "--name", "Jia's org", "--url", server.url, "--json"])).stdout) as { orgId: string }).orgId;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-import-cli-"));
});
afterAll(async () => {
  await server?.close();
  await jira?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const common = () => ["--org-id", orgId, "--url", server.url, "--poll-ms", "100"];
const jiraArgs = () => ["import", "jira", "--site", jira.url, "--email", jira.email, "--project-key", "JCL", ...common()];

it("jira: a dry run prints counts, mapping, placeholders and what stays behind; the import keeps the keys; the token is never printed", async () => {
  const dry = await retasc(person, [...jiraArgs(), "--dry-run"], { input: `${jira.apiToken}\n` });
  expect(dry.code, dry.stderr).toBe(0);
  expect(dry.stdout).toContain("Dry run: nothing was written.");
  expect(dry.stdout).toMatch(/In Progress +doing/);
  expect(dry.stdout).toContain("Jira Person 1");
  expect(dry.stderr).toContain("left behind: Jira's sprints");
  const run = await retasc(person, [...jiraArgs(), "--new-project", "From Jira"], { input: `${jira.apiToken}\n` });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain("Imported JCL: 80 created");
  expect(run.stdout + run.stderr + dry.stdout + dry.stderr).not.toContain(jira.apiToken);
  const again = await retasc(person, [...jiraArgs(), "--project", "JCL", "--json"], { env: { RETASC_IMPORT_TOKEN: jira.apiToken } });
  expect(again.code, again.stderr).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ phase: "done", source: "jira", counts: { created: 0, unchanged: 80 } });
  const wrong = await retasc(person, [...jiraArgs(), "--dry-run"], { input: "not-the-token\n" });
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toContain("UNAUTHORIZED");
});

it("csv: the guessed mapping is shown, a mapping file is taken, rows take the project's next numbers", async () => {
  const file = path.join(dir, "board.csv");
  fs.writeFileSync(file, "ID,Title,Status,Priority\nr1,First,Done,High\nr2,Second,In Progress,Low\n");
  const dry = await retasc(person, ["import", "csv", "--file", file, "--dry-run", ...common()]);
  expect(dry.code, dry.stderr).toBe(0);
  expect(dry.stderr).toContain("mapping guessed from the header");
  expect(dry.stdout).toMatch(/Done +done +1/);
  const mapping = path.join(dir, "mapping.json");
  fs.writeFileSync(mapping, JSON.stringify({ columns: { id: "ID", title: "Title", status: "Status" }, statuses: { Done: "canceled" } }));
  const run = await retasc(person, ["import", "csv", "--file", file, "--mapping", mapping, "--new-project", "Board", "--prefix", "BRD", "--json", ...common()]);
  expect(run.code, run.stderr).toBe(0);
  expect(JSON.parse(run.stdout)).toMatchObject({ phase: "done", source: "csv", counts: { created: 2 } });
  const exported = await retasc(person, ["export", "--org-id", orgId, "--url", server.url]);
  expect(exported.stdout).toMatch(/"identifier":\s*"BRD-2"/);
});
