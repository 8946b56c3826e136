import { afterAll, beforeAll, expect, it } from "vitest";
import { generateClickUpWorkspace, startFakeClickUp, type FakeClickUp } from "../../test/fakes/clickup.ts";
import { login, retasc, signUp, startServer, type Person, type Server } from "./testing.ts";

/**
 * `retasc import clickup` against the built app over HTTP and a local ClickUp: the token from
 * standard input or RETASC_IMPORT_TOKEN (never a flag, never printed), the Spaces and Lists listed
 * when none is named, a dry run that writes nothing, progress until done, a re-run that reconciles.
 */
let server: Server;
let clickup: FakeClickUp;
let person: Person;
let orgId: string;

beforeAll(async () => {
  clickup = await startFakeClickUp({ workspace: generateClickUpWorkspace({ tasks: 30, inFolder: 4 }) });
  server = await startServer({ CLICKUP_API_URL: clickup.url, RETASC_IMPORT_ALLOW_HOSTS: new URL(clickup.url).host, RETASC_WORKERS: "inline", OUTBOX_POLL_MS: "200" });
  person = await signUp(server, "Cleo");
  expect((await login(server, person)).code).toBe(0);
  orgId = (JSON.parse((await retasc(person, ["org", "create", "--name", "Cleo's org", "--url", server.url, "--json"])).stdout) as { orgId: string }).orgId;
});
afterAll(async () => {
  await server?.close();
  await clickup?.close();
});

const common = () => ["--org-id", orgId, "--url", server.url, "--poll-ms", "100"];

it("lists the Spaces and Lists, a dry run prints the mapping, a List's import takes the project's numbers, a Space's re-run reconciles it; the token is never printed", async () => {
  const w = clickup.workspace;
  const listed = await retasc(person, ["import", "clickup", "--dry-run", ...common()], { input: `${clickup.token}\n` });
  expect(listed.code).toBe(1);
  expect(listed.stdout).toMatch(new RegExp(`space +${w.space.id} +Product +Product +Acme +34`));
  expect(listed.stdout).toMatch(new RegExp(`list +${w.list.id} +Roadmap +Product +Acme +30`));
  expect(listed.stderr).toContain("--list");
  const args = ["import", "clickup", "--list", `https://app.clickup.com/${w.team.id}/v/li/${w.list.id}`, ...common()];
  const dry = await retasc(person, [...args, "--dry-run"], { input: `${clickup.token}\n` });
  expect(dry.code, dry.stderr).toBe(0);
  expect(dry.stdout).toContain("Dry run: nothing was written.");
  expect(dry.stdout).toMatch(/in progress +doing/);
  expect(dry.stdout).toMatch(/urgent +1/);
  expect(dry.stdout).toContain("ClickUp Person 1");
  const run = await retasc(person, [...args, "--new-project", "Roadmap", "--prefix", "RMP"], { input: `${clickup.token}\n` });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain("Imported Roadmap (ClickUp List): 30 created");
  expect(run.stdout + run.stderr + dry.stdout + dry.stderr + listed.stdout + listed.stderr).not.toContain(clickup.token);
  const again = await retasc(person, [...args, "--project", "RMP", "--json"], { env: { RETASC_IMPORT_TOKEN: clickup.token } });
  expect(again.code, again.stderr).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ phase: "done", source: "clickup", counts: { created: 0, unchanged: 30 } });
  // The Space holds the List: its re-run into the same project adds only the other List's tasks.
  const space = await retasc(person, ["import", "clickup", "--space", w.space.id, ...common(), "--project", "RMP", "--json"], { env: { RETASC_IMPORT_TOKEN: clickup.token } });
  expect(space.code, space.stderr).toBe(0);
  expect(JSON.parse(space.stdout)).toMatchObject({ phase: "done", counts: { created: 4, unchanged: 30 } });
  const wrong = await retasc(person, [...args, "--dry-run"], { input: "pk_0_NOT\n" });
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toContain("UNAUTHORIZED");
  expect(wrong.stderr).toContain("personal API token");
});
