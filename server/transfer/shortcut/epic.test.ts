import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import { ARCHIVED_EPIC, generateShortcutWorkspace, startFakeShortcut, type FakeShortcut } from "../../../test/fakes/shortcut.ts";
import type { Services } from "../../context.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { waitFor } from "../../testing/wait.ts";
import { importAgain } from "../again.ts";
import { sha256Hex, snapshotProject } from "../linear/testing.ts";
import { applyImportRun } from "../pipeline/apply-run.ts";
import { importStatus } from "../pipeline/status.ts";
import { finishRun, identifiersBySourceId } from "../pipeline/testing.ts";
import { dryRunShortcutImport, findShortcutEpicToImport, listShortcutEpics, listShortcutTeams, startShortcutImport } from "./index.ts";

/**
 * One Shortcut epic as the import's target (issue 29), against the local Shortcut over real HTTP
 * and the real apply: the epic a container, its stories (of either team, in two pages) inside it,
 * no other story of the team; the epics listed through `/epics/paginated`'s pages; a second run,
 * a run again with the kept credential and an apply killed half way all reconcile, nothing doubled;
 * a team and an epic, both or neither, an epic the token does not see, a name two epics have and
 * an archived epic are refused with what to do.
 */
const env = useTestServices();
let sc: FakeShortcut;
let services: Services;
let org: SeededOrg;

beforeAll(async () => {
  sc = await startFakeShortcut({ workspace: generateShortcutWorkspace({ stories: 500, elsewhere: 4, epicFiles: true, moreEpics: 260 }) });
  services = servicesFor(env.tdb.database, { config: testConfig({ SHORTCUT_API_URL: sc.url, RETASC_IMPORT_ALLOW_HOSTS: new URL(sc.url).host }) });
  org = await seedOrg(services, { prefix: "MAIN" });
}, 60_000);
afterAll(() => sc?.close());

const ctx = () => ({ ...org.agents.alice.ctx, config: services.config });
const w = () => sc.workspace;
const EPIC = 9000;
const epic = () => w().epics.find((e) => e.id === EPIC)!;
const inEpic = () => w().stories.filter((s) => s.epic_id === EPIC);

describe("a Shortcut epic as the import's target", () => {
  it("lists the epics the token sees through every page of /epics/paginated, archived ones left out", async () => {
    const before = sc.requests.length;
    const listed = await listShortcutEpics(ctx(), { apiToken: sc.token });
    const paged = sc.requests.slice(before);
    expect(paged).toEqual(["GET /api/v3/epics/paginated?page=1&page_size=250", "GET /api/v3/epics/paginated?page=2&page_size=250"]);
    expect(listed.length).toBe(w().epics.filter((e) => !e.archived).length);
    expect(w().epics.length).toBeGreaterThan(250);
    expect(listed.find((e) => e.id === String(EPIC))).toEqual({ id: String(EPIC), name: "Epic 0", state: epic().state, issueCount: inEpic().length, lastImportAt: null });
    expect(listed.find((e) => e.id === String(ARCHIVED_EPIC))).toBeUndefined();
  });

  it("refuses an archived epic by its id, URL or name (CONFLICT, how to bring it back), and leaves archived ones out of a name", async () => {
    const token = { apiToken: sc.token };
    const archived = { code: "CONFLICT", message: `Shortcut epic ${ARCHIVED_EPIC} (Archived epic) is archived`, hint: expect.stringMatching(/^Unarchive it in Shortcut to import it, or name another epic\. Listing the epics/), details: { reason: "epic_archived", epicId: String(ARCHIVED_EPIC) } };
    for (const wanted of [String(ARCHIVED_EPIC), `epic:${ARCHIVED_EPIC}`, `https://app.shortcut.com/acme/epic/${ARCHIVED_EPIC}/archived-epic`, "archived EPIC"]) {
      await expect(dryRunShortcutImport(ctx(), { ...token, epic: wanted }), wanted).rejects.toMatchObject(archived);
      await expect(findShortcutEpicToImport(ctx(), { ...token, epic: wanted }), wanted).rejects.toMatchObject(archived);
    }
    await expect(startShortcutImport(ctx(), { ...token, epic: String(ARCHIVED_EPIC), newProject: { prefix: "ARC" } })).rejects.toMatchObject(archived);
    await expect(findShortcutEpicToImport(ctx(), { ...token, epic: "424242" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    // An archived epic sharing a live one's name is no twin: the name names the live one.
    const shelved = w().epics.find((e) => e.id === 9104)!;
    expect(shelved.archived).toBe(true);
    shelved.name = "Epic 1";
    try {
      expect(await findShortcutEpicToImport(ctx(), { ...token, epic: "epic 1" })).toMatchObject({ id: "9001", name: "Epic 1", lastImportAt: null });
    } finally {
      shelved.name = "Planned epic 4";
    }
  });

  it("refuses both a team and an epic, neither, an epic the token does not see, and a name two epics have", async () => {
    const token = { apiToken: sc.token };
    await expect(dryRunShortcutImport(ctx(), { ...token, team: "mobile", epic: "Epic 0" })).rejects.toThrow(/epic.*pass team or epic, not both/s);
    await expect(dryRunShortcutImport(ctx(), { ...token })).rejects.toThrow(/team is required, or instead epic/);
    await expect(startShortcutImport(ctx(), { ...token, team: "", epic: " ", newProject: { prefix: "NONE" } })).rejects.toThrow(/team is required, or instead epic/);
    for (const wanted of ["424242", "No such epic"]) {
      await expect(dryRunShortcutImport(ctx(), { ...token, epic: wanted })).rejects.toMatchObject({ code: "NOT_FOUND", message: `the token sees no Shortcut epic ${wanted}`, hint: expect.stringMatching(/Listing the epics/) });
    }
    const twin = w().epics.find((e) => e.id === 9100)!;
    twin.name = "Epic 1";
    try {
      await expect(dryRunShortcutImport(ctx(), { ...token, epic: "epic 1" })).rejects.toMatchObject({ code: "INVALID_INPUT", hint: "Name the epic by its id: 9001, 9100." });
    } finally {
      twin.name = "Planned epic 0";
    }
  });

  it("imports the epic as a container with its stories of either team, and no other story; a second run and a run again with the kept credential change nothing", async () => {
    const stories = inEpic();
    // Two pages of the epic's stories, one of them the web team's.
    expect(stories.length).toBeGreaterThan(25);
    expect(stories.some((s) => s.group_id === w().otherTeam.id)).toBe(true);
    const files = epic().files_for_fake!.length + stories.reduce((n, s) => n + s.files!.length, 0);
    const dry = await dryRunShortcutImport(ctx(), { apiToken: sc.token, epic: "epic 0" });
    expect(dry.counts).toMatchObject({ issues: stories.length + 1, containers: 1, filesCopied: files });

    const started = await startShortcutImport(ctx(), { apiToken: sc.token, epic: String(EPIC), newProject: { prefix: "EPC" }, keepCredential: true });
    expect(started).toMatchObject({ epicId: String(EPIC), sourceId: `epic:${EPIC}`, total: stories.length + 1 });
    const status = await finishRun(services, ctx(), started.runId);
    expect(status).toMatchObject({ phase: "done", error: null, counts: { created: stories.length + 1, filesCopied: files } });

    const got = await snapshotProject(services, org.orgId, "EPC");
    const ident = await identifiersBySourceId(services, org.orgId);
    const key = (kind: "story" | "epic", id: number) => ident.get(`shortcut:acme:${kind}:${id}`);
    expect(got.size).toBe(stories.length + 1);
    const container = got.get(key("epic", EPIC)!)!;
    expect(container).toMatchObject({ title: "Epic 0", work: false, parent: null });
    expect(container.attachments.map((a) => a.url).sort()).toEqual(epic().files_for_fake!.map((f) => `file:sha256:${sha256Hex(sc.files.get(f.id)!)}`).sort());
    for (const s of stories) expect(got.get(key("story", s.id)!), `sc-${s.id}`).toMatchObject({ title: s.name, parent: key("epic", EPIC), work: true });
    for (const s of w().stories.filter((s) => s.epic_id !== EPIC)) expect(key("story", s.id), `sc-${s.id}`).toBeUndefined();

    // The run is the epic's, not the team's: the epic is last imported now, the team never.
    expect((await listShortcutEpics(ctx(), { apiToken: sc.token })).find((e) => e.id === String(EPIC))!.lastImportAt).toBe(status.finishedAt);
    expect((await listShortcutTeams(ctx(), { apiToken: sc.token })).every((t) => t.lastImportAt === null)).toBe(true);

    const url = `https://app.shortcut.com/acme/epic/${EPIC}/epic-0`;
    const again = await startShortcutImport(ctx(), { apiToken: sc.token, epic: url, projectId: status.projectId });
    const unchanged = { phase: "done", counts: { created: 0, updated: 0, unchanged: stories.length + 1, filesCopied: 0 } };
    expect(await finishRun(services, ctx(), again.runId)).toMatchObject(unchanged);
    const kept = await importAgain(ctx(), { source: "shortcut", sourceId: `epic:${EPIC}` });
    expect(kept).toMatchObject({ project: "EPC", total: stories.length + 1 });
    expect(await finishRun(services, ctx(), kept.runId)).toMatchObject(unchanged);
    expect((await snapshotProject(services, org.orgId, "EPC")).size).toBe(stories.length + 1);
  }, 300_000);

  it("an apply killed half way resumes to the same project, nothing doubled", async () => {
    const other = await seedOrg(services, { prefix: "MAIN" });
    const them = { ...other.agents.alice.ctx, config: services.config };
    // The crash: the second page's transaction fails as it commits its progress, as a worker killed there would leave it.
    await services.db.execute(sql.raw(`create or replace function crash_second_epic_page() returns trigger language plpgsql as $$ begin if new.pages_applied = 2 and new.org_id = '${other.orgId}' then raise exception 'worker killed'; end if; return new; end $$`));
    await services.db.execute(sql.raw(`create trigger crash_second_epic_page before update on linear_import_runs for each row execute function crash_second_epic_page()`));
    const { runId } = await startShortcutImport(them, { apiToken: sc.token, epic: "Epic 0", newProject: { prefix: "KIL" } });
    await waitFor(async () => ((await importStatus(them, { runId })).phase !== "fetching" ? true : null), 120_000, "staged");
    await expect(applyImportRun(services, runId)).rejects.toThrow();
    const [stopped] = await query<{ pages_applied: number; phase: string }>(services.db, sql`select pages_applied, phase from linear_import_runs where id = ${runId}`);
    expect(stopped).toEqual({ pages_applied: 1, phase: "applying" });
    await services.db.execute(sql`drop trigger crash_second_epic_page on linear_import_runs`);
    const total = inEpic().length + 1;
    expect(await finishRun(services, them, runId)).toMatchObject({ phase: "done", counts: { created: total } });
    const got = await snapshotProject(services, other.orgId, "KIL");
    expect(got.size).toBe(total);
    expect([...got.values()].filter((i) => !i.work).length).toBe(1);
  }, 300_000);
});
