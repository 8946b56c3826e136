import { afterAll, beforeAll, expect, it } from "vitest";
import { generateAsanaProject, startFakeAsana, type FakeAsana } from "../../test/fakes/asana.ts";
import { ARCHIVED_EPIC, generateShortcutWorkspace, startFakeShortcut, type FakeShortcut } from "../../test/fakes/shortcut.ts";
import { login, retasc, signUp, startServer, type Person, type Server } from "./testing.ts";

/**
 * `retasc import asana` and `retasc import shortcut` against the built app over HTTP and a local
 * Asana and Shortcut: the token from
 * standard input or RETASC_IMPORT_TOKEN (never a flag, never printed), the projects listed when
 * none is named, a dry run that writes nothing, progress until done, a re-run that reconciles.
 */
let server: Server;
let asana: FakeAsana;
let shortcut: FakeShortcut;
let person: Person;
let orgId: string;

beforeAll(async () => {
  asana = await startFakeAsana({ project: generateAsanaProject({ tasks: 40 }) });
  shortcut = await startFakeShortcut({ workspace: generateShortcutWorkspace({ stories: 30 }) });
  server = await startServer({ ASANA_API_URL: asana.url, SHORTCUT_API_URL: shortcut.url, RETASC_IMPORT_ALLOW_HOSTS: `${new URL(asana.url).host},${new URL(shortcut.url).host}`, RETASC_WORKERS: "inline", OUTBOX_POLL_MS: "200" });
  person = await signUp(server, "Asa");
  expect((await login(server, person)).code).toBe(0);
  orgId = (JSON.parse((await retasc(person, ["org", "create", "--name", "Asa's org", "--url", server.url, "--json"])).stdout) as { orgId: string }).orgId;
});
afterAll(async () => {
  await server?.close();
  await asana?.close();
  await shortcut?.close();
});

const common = () => ["--org-id", orgId, "--url", server.url, "--poll-ms", "100"];

it("asana: lists the projects, a dry run prints the mapping, the import takes the project's numbers, a re-run reconciles; the token is never printed", async () => {
  const listed = await retasc(person, ["import", "asana", "--dry-run", ...common()], { input: `${asana.token}\n` });
  expect(listed.code).toBe(1);
  expect(listed.stdout).toMatch(new RegExp(`${asana.project.gid} +Launch plan +Acme +40`));
  expect(listed.stderr).toContain("--asana-project");
  const args = ["import", "asana", "--asana-project", asana.project.gid, ...common()];
  const dry = await retasc(person, [...args, "--dry-run"], { input: `${asana.token}\n` });
  expect(dry.code, dry.stderr).toBe(0);
  expect(dry.stdout).toContain("Dry run: nothing was written.");
  expect(dry.stdout).toMatch(/In Progress +doing/);
  expect(dry.stdout).toMatch(/Urgent +1/);
  expect(dry.stdout).toContain("Asana Person 1");
  const noPrefix = await retasc(person, [...args, "--new-project", "Launch"], { input: `${asana.token}\n` });
  expect(noPrefix.code).toBe(1);
  const run = await retasc(person, [...args, "--new-project", "Launch", "--prefix", "LCH"], { input: `${asana.token}\n` });
  expect(run.code, run.stderr).toBe(0);
  const tasks = 40 + [...asana.project.subtasks.values()].flat().length;
  expect(run.stdout).toContain(`Imported Launch plan (Asana): ${tasks} created`);
  expect(run.stdout + run.stderr + dry.stdout + dry.stderr + listed.stdout + listed.stderr).not.toContain(asana.token);
  const again = await retasc(person, [...args, "--project", "LCH", "--json"], { env: { RETASC_IMPORT_TOKEN: asana.token } });
  expect(again.code, again.stderr).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ phase: "done", source: "asana", counts: { created: 0, unchanged: tasks } });
  const exported = await retasc(person, ["export", "--org-id", orgId, "--url", server.url]);
  expect(exported.stdout).toMatch(new RegExp(`"identifier":\\s*"LCH-${tasks}"`));
  const wrong = await retasc(person, [...args, "--dry-run"], { input: "0/not-the-token\n" });
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toContain("UNAUTHORIZED");
  expect(wrong.stderr).toContain("personal access token");
});

it("shortcut: lists the teams, a dry run prints the mapping, the import brings stories and epics, a re-run reconciles; the token is never printed", async () => {
  const listed = await retasc(person, ["import", "shortcut", "--dry-run", ...common()], { input: `${shortcut.token}\n` });
  expect(listed.code).toBe(1);
  expect(listed.stdout).toMatch(/Mobile +@mobile +30/);
  expect(listed.stderr).toContain("--team");
  const args = ["import", "shortcut", "--team", "@mobile", ...common()];
  const dry = await retasc(person, [...args, "--dry-run"], { input: `${shortcut.token}\n` });
  expect(dry.code, dry.stderr).toBe(0);
  expect(dry.stdout).toMatch(/In Development +doing/);
  expect(dry.stdout).toMatch(/Epic: in progress +doing/);
  expect(dry.stdout).toContain("Shortcut Person 1");
  const epics = new Set(shortcut.workspace.stories.map((s) => s.epic_id).filter((e) => e)).size;
  const run = await retasc(person, [...args, "--new-project", "Mobile", "--prefix", "MOB"], { input: `${shortcut.token}\n` });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain(`Imported Mobile (Shortcut): ${30 + epics} created`);
  const again = await retasc(person, [...args, "--project", "MOB", "--json"], { env: { RETASC_IMPORT_TOKEN: shortcut.token } });
  expect(again.code, again.stderr).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ phase: "done", source: "shortcut", counts: { created: 0, unchanged: 30 + epics } });
  expect(run.stdout + run.stderr + dry.stdout + dry.stderr + listed.stdout + listed.stderr + again.stdout).not.toContain(shortcut.token);
  const wrong = await retasc(person, [...args, "--dry-run"], { input: "not-the-token\n" });
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toContain("UNAUTHORIZED");
  expect(wrong.stderr).toContain("API Tokens");
});

it("shortcut --epic: lists the epics beside the teams (archived ones left out), refuses --team with --epic and an archived epic, imports one epic (a container and its stories) and reconciles a re-run", async () => {
  // An org of its own: the team's import above brought these stories into the first one, where a run reconciles them in place.
  const epicOrg = (JSON.parse((await retasc(person, ["org", "create", "--name", "Epic org", "--url", server.url, "--json"])).stdout) as { orgId: string }).orgId;
  const common = () => ["--org-id", epicOrg, "--url", server.url, "--poll-ms", "100"];
  const help = await retasc(person, ["import", "--help"]);
  expect(help.stdout).toMatch(/--epic <id>\s+shortcut, instead of --team: one epic, by its id, URL or name/);
  const both = await retasc(person, ["import", "shortcut", "--team", "Mobile", "--epic", "9001", "--dry-run", ...common()], { input: `${shortcut.token}\n` });
  expect(both.code).toBe(1);
  expect(both.stderr).toContain("pass --team or --epic, not both");
  const listed = await retasc(person, ["import", "shortcut", "--dry-run", ...common()], { input: `${shortcut.token}\n` });
  expect(listed.code).toBe(1);
  expect(listed.stdout).toMatch(/Mobile +@mobile +30/);
  const stories = shortcut.workspace.stories.filter((s) => s.epic_id === 9001);
  expect(listed.stdout).toMatch(new RegExp(`9001 +Epic 1 +in progress +${stories.length} +never`));
  expect(listed.stderr).toContain("--epic <id or name>");
  expect(listed.stdout).not.toContain("Archived epic");
  expect(listed.stdout).not.toContain(String(ARCHIVED_EPIC));
  const unknown = await retasc(person, ["import", "shortcut", "--epic", "424242", "--dry-run", ...common()], { input: `${shortcut.token}\n` });
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toContain("✗ NOT_FOUND: the token sees no Shortcut epic 424242");
  // Archived: refused by the server, by its id or its name, before a dry run or an import reads a story.
  for (const [wanted, more] of [[String(ARCHIVED_EPIC), ["--dry-run"]], ["Archived epic", ["--new-project", "Old", "--prefix", "OLD"]]] as const) {
    const archived = await retasc(person, ["import", "shortcut", "--epic", wanted, ...more, ...common()], { input: `${shortcut.token}\n` });
    expect(archived.code, wanted).toBe(1);
    expect(archived.stderr).toContain(`✗ CONFLICT: Shortcut epic ${ARCHIVED_EPIC} (Archived epic) is archived`);
    expect(archived.stderr).toContain("Unarchive it in Shortcut to import it, or name another epic.");
  }
  const dry = await retasc(person, ["import", "shortcut", "--epic", "epic 1", "--dry-run", "--json", ...common()], { input: `${shortcut.token}\n` });
  expect(dry.code, dry.stderr).toBe(0);
  expect(JSON.parse(dry.stdout)).toMatchObject({ counts: { issues: stories.length + 1, containers: 1 } });
  const args = ["import", "shortcut", "--epic", "9001", ...common()];
  const run = await retasc(person, [...args, "--new-project", "Epic one", "--prefix", "EPO"], { input: `${shortcut.token}\n` });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain(`Imported Epic 1 (Shortcut epic): ${stories.length + 1} created`);
  const again = await retasc(person, [...args, "--project", "EPO", "--json"], { env: { RETASC_IMPORT_TOKEN: shortcut.token } });
  expect(again.code, again.stderr).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ phase: "done", source: "shortcut", counts: { created: 0, updated: 0, unchanged: stories.length + 1 } });
  expect(run.stdout + run.stderr + dry.stdout + listed.stdout + listed.stderr + again.stdout).not.toContain(shortcut.token);
});
