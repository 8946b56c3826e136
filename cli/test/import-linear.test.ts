import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateWorkspace } from "../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../test/fakes/linear.ts";
import { login, retasc, signUp, startServer, type Person, type Server } from "./testing.ts";

/**
 * `retasc import linear` against the built app over HTTP and a fake Linear API: the key from
 * standard input or RETASC_IMPORT_TOKEN (never a flag, never printed), the teams listed when none
 * is named, progress until done, and the identifiers kept; a second run reconciles.
 */
let server: Server;
let linear: FakeLinear;
let person: Person;
let orgId: string;

beforeAll(async () => {
  linear = await startFakeLinear({ workspace: generateWorkspace({ issues: 120, seed: 7 }) });
  server = await startServer({ LINEAR_API_URL: linear.apiUrl, RETASC_WORKERS: "inline", OUTBOX_POLL_MS: "200" });
  person = await signUp(server, "Lina");
  expect((await login(server, person)).code).toBe(0);
  orgId = (JSON.parse((await retasc(person, ["org", "create", "--name", "Lina's org", "--url", server.url, "--json"])).stdout) as { orgId: string }).orgId;
});
afterAll(async () => {
  await server?.close();
  await linear?.close();
});

const base = () => ["import", "linear", "--org-id", orgId, "--url", server.url, "--poll-ms", "100"];

it("without a key refuses and says where the key goes; without --team lists the teams; a dry run takes --mapping by the states' names", async () => {
  const none = await retasc(person, [...base(), "--team", linear.workspace.team.key], { input: "" });
  expect(none.code).toBe(1);
  expect(none.stderr).toContain("RETASC_IMPORT_TOKEN");

  const teams = await retasc(person, base(), { input: `${linear.apiKey}\n` });
  expect(teams.code).toBe(1);
  expect(teams.stdout).toContain(linear.workspace.team.key);
  expect(teams.stderr).toContain("--team");
  expect(teams.stdout + teams.stderr).not.toContain(linear.apiKey);

  const mapping = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "retasc-linear-")), "mapping.json");
  fs.writeFileSync(mapping, JSON.stringify({ statuses: { "In Review": "done" } }));
  const plain = await retasc(person, [...base(), "--team", linear.workspace.team.key, "--dry-run"], { input: `${linear.apiKey}\n` });
  expect(plain.stdout).toMatch(/In Review +doing/);
  const mapped = await retasc(person, [...base(), "--team", linear.workspace.team.key, "--dry-run", "--mapping", mapping], { input: `${linear.apiKey}\n` });
  expect(mapped.code, mapped.stderr).toBe(0);
  expect(mapped.stdout).toMatch(/In Review +done/);
  fs.rmSync(path.dirname(mapping), { recursive: true, force: true });

  const wrong = await retasc(person, [...base(), "--team", linear.workspace.team.key, "--new-project", "Eng"], { input: "lin_api_not_the_key\n" });
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toMatch(/✗ [A-Z_]+:/);
});

it("imports the team with its identifiers, drawing progress, and a second run reconciles into the same project", async () => {
  const { key } = linear.workspace.team;
  const first = await retasc(person, [...base(), "--team", key, "--new-project", "Engineering"], { input: `${linear.apiKey}\n` });
  expect(first.code, first.stderr).toBe(0);
  expect(first.stdout).toContain(`Imported ${key}`);
  expect(first.stderr).toMatch(new RegExp(`writing issues|done +\\[#+\\] \\d+/\\d+`));
  expect(first.stdout + first.stderr).not.toContain(linear.apiKey);

  const teamIssues = linear.workspace.issues.filter((i) => !i.archivedAt);
  const highest = Math.max(...teamIssues.map((i) => i.number));
  const exported = await retasc(person, ["export", "--org-id", orgId, "--url", server.url]);
  expect(exported.code, exported.stderr).toBe(0);
  expect(exported.stdout).toMatch(new RegExp(`"identifier":\\s*"${key}-${highest}"`));

  const again = await retasc(person, [...base(), "--team", key, "--project", key, "--json"], { env: { RETASC_IMPORT_TOKEN: linear.apiKey } });
  expect(again.code, again.stderr).toBe(0);
  expect(again.stderr).toContain("was imported on");
  const status = JSON.parse(again.stdout) as { phase: string; lastImportAt: string | null };
  expect(status.phase).toBe("done");
  expect(status.lastImportAt).not.toBeNull();
});

it("keeps the key when asked: `import kept` lists it, `import again` reconciles with nothing pasted, `import forget` removes it", async () => {
  const { key, id } = linear.workspace.team;
  const where = ["--org-id", orgId, "--url", server.url];
  const keep = await retasc(person, [...base(), "--team", key, "--project", key, "--keep-credential"], { input: `${linear.apiKey}\n` });
  expect(keep.code, keep.stderr).toBe(0);
  expect(keep.stderr).toContain("retasc import again linear");
  const listed = await retasc(person, ["import", "kept", ...where]);
  expect(listed.code, listed.stderr).toBe(0);
  expect(listed.stdout).toMatch(new RegExp(`linear +${id}`));
  expect(listed.stdout + listed.stderr).not.toContain(linear.apiKey);

  const again = await retasc(person, ["import", "again", "linear", id, ...where, "--poll-ms", "100", "--json"], { input: "" });
  expect(again.code, again.stderr).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ phase: "done", counts: { created: 0 } });

  const forget = await retasc(person, ["import", "forget", "linear", id, ...where]);
  expect(forget.code, forget.stderr).toBe(0);
  expect((await retasc(person, ["import", "kept", ...where])).stdout).toContain("No credential is kept");
  const gone = await retasc(person, ["import", "again", "linear", id, ...where]);
  expect(gone.code).toBe(1);
  expect(gone.stderr).toContain("NOT_FOUND");
});
