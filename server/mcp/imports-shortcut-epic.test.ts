import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import pino from "pino";
import { afterAll, beforeAll, expect, test } from "vitest";
import { ARCHIVED_EPIC, generateShortcutWorkspace, startFakeShortcut, type FakeShortcut } from "../../test/fakes/shortcut.ts";
import type { Services } from "../context.ts";
import { useTestServices } from "../testing/database.ts";
import { servicesFor, testConfig } from "../testing/db.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { waitFor } from "../testing/wait.ts";
import { applyImportRun } from "../transfer/pipeline/apply-run.ts";
import { handleMcpRequest } from "./http.ts";
import { callError, callOk, connectClient, inProcessOrigin } from "./testing.ts";

/**
 * One Shortcut epic through run_import over /mcp (issue 29): `target` is `epic:<id or name>` for
 * Shortcut (list_import_sources says so; no argument was added, so tools/list costs what it did),
 * the epics listed beside the teams when no target is given, each with when it was last imported;
 * a dry run, a run into a new project, a second run that reconciles; an epic the token does not
 * see is answered with where to look, an archived one (never listed) with how to bring it back.
 */
const env = useTestServices();
let sc: FakeShortcut;
let services: Services;
let org: SeededOrg;
let owner: Client;

beforeAll(async () => {
  sc = await startFakeShortcut({ workspace: generateShortcutWorkspace({ stories: 40, elsewhere: 4 }) });
  services = servicesFor(env.tdb.database, { config: testConfig({ SHORTCUT_API_URL: sc.url, RETASC_IMPORT_ALLOW_HOSTS: new URL(sc.url).host }) });
  org = await seedOrg(services, { name: "Acme" });
  const fetch: typeof globalThis.fetch = async (url, init) => handleMcpRequest(new Request(url, { ...init, signal: undefined }), { services, log: pino({ level: "silent" }) });
  owner = await connectClient(`${inProcessOrigin}/mcp`, org.agents.alice.key, { fetch });
}, 60_000);
afterAll(async () => {
  await owner?.close();
  await sc?.close();
});

const shortcut = () => ({ source: "shortcut", token: sc.token });
const finished = async (runId: string) => {
  const staged = await waitFor(async () => {
    const latest = await callOk(owner, "latest_import");
    return latest.phase !== "fetching" ? latest : null;
  }, 60_000, "the run staged");
  if (staged.phase === "applying") await applyImportRun(services, runId);
  return callOk(owner, "latest_import");
};

test("run_import takes a Shortcut epic as target epic:<id or name>: listed, dry-run, run, run again reconciling", async () => {
  const { sources } = await callOk(owner, "list_import_sources");
  expect(sources.find((s: { source: string }) => s.source.startsWith("shortcut")).target).toContain("epic:<an epic's id or name>");
  const epic = sc.workspace.epics.find((e) => e.id === 9001)!;
  const stories = sc.workspace.stories.filter((s) => s.epic_id === epic.id);
  expect(stories.some((s) => s.group_id === sc.workspace.otherTeam.id)).toBe(true);

  const { targets } = await callOk(owner, "run_import", shortcut());
  expect(targets).toContainEqual({ target: sc.workspace.team.id, name: "Mobile", issueCount: 40, lastImportAt: null });
  expect(targets).toContainEqual({ target: "epic:9001", name: "epic Epic 1", issueCount: stories.length, lastImportAt: null });
  expect(targets.find((t: { target: string }) => t.target === `epic:${ARCHIVED_EPIC}`)).toBeUndefined();
  expect(await callError(owner, "run_import", { ...shortcut(), target: `epic:${ARCHIVED_EPIC}` })).toMatchObject({ code: "CONFLICT", message: `Shortcut epic ${ARCHIVED_EPIC} (Archived epic) is archived`, hint: expect.stringContaining("Unarchive it in Shortcut") });

  const dry = await callOk(owner, "run_import", { ...shortcut(), target: "epic:Epic 1" });
  expect(dry).toMatchObject({ dryRun: true, counts: { issues: stories.length + 1, containers: 1 } });
  const started = await callOk(owner, "run_import", { ...shortcut(), target: "epic:9001", project: "EPIC", dryRun: false });
  expect(started).toMatchObject({ dryRun: false, project: "EPIC", total: stories.length + 1 });
  const done = await finished(started.runId);
  expect(done).toMatchObject({ source: "shortcut", phase: "done", counts: { created: stories.length + 1 } });
  const listed = (await callOk(owner, "run_import", shortcut())).targets as { target: string; lastImportAt: string | null }[];
  expect(listed.find((t) => t.target === "epic:9001")!.lastImportAt).toBe(done.finishedAt);
  expect(listed.find((t) => t.target === sc.workspace.team.id)!.lastImportAt).toBeNull();

  const again = await callOk(owner, "run_import", { ...shortcut(), target: "epic:9001", project: "EPIC", dryRun: false });
  expect(await finished(again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, unchanged: stories.length + 1 } });

  expect(await callError(owner, "run_import", { ...shortcut(), target: "epic:424242" })).toMatchObject({ code: "NOT_FOUND", hint: expect.stringContaining("run_import without a target") });
  expect(await callError(owner, "run_import", { ...shortcut(), target: "epic:" })).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("team is required, or instead epic") });
}, 120_000);
