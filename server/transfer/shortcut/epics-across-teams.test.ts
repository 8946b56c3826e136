import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateShortcutWorkspace, startFakeShortcut, type FakeShortcut } from "../../../test/fakes/shortcut.ts";
import type { Services } from "../../context.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { sha256Hex, snapshotProject } from "../linear/testing.ts";
import { identifiersBySourceId, finishRun } from "../pipeline/testing.ts";
import { dryRunShortcutImport, startShortcutImport } from "./index.ts";

/**
 * A Shortcut team's epics as a workspace of several teams has them (issue 29), against the local
 * Shortcut: an epic holds stories of other teams too (`/epics/{id}/stories`), which come over
 * with the team's, in their epic's container, linked both ways to the team's stories; stories of
 * other teams in no epic of the team stay. Files put on an epic (uploads its description and
 * comments link to; the API lists files on stories only) come over as files of the epic's
 * container, the text naming them here; a link elsewhere stays a link in the text.
 */
const env = useTestServices();
let sc: FakeShortcut;
let services: Services;
let org: SeededOrg;

beforeAll(async () => {
  sc = await startFakeShortcut({ workspace: generateShortcutWorkspace({ stories: 30, elsewhere: 4, epicFiles: true }) });
  services = servicesFor(env.tdb.database, { config: testConfig({ SHORTCUT_API_URL: sc.url, RETASC_IMPORT_ALLOW_HOSTS: new URL(sc.url).host }) });
  org = await seedOrg(services, { prefix: "MAIN" });
}, 60_000);
afterAll(() => sc?.close());

const ctx = () => ({ ...org.agents.alice.ctx, config: services.config });
const w = () => sc.workspace;

describe("a Shortcut team's epics across teams", () => {
  it("brings the epics' stories from other teams with their links, and the epics' files as files of their containers; a second run changes nothing", async () => {
    const team = w().stories.filter((s) => s.group_id === w().team.id);
    const teamEpics = new Set(team.map((s) => s.epic_id).filter((e): e is number => typeof e === "number"));
    const web = w().stories.filter((s) => s.group_id === w().otherTeam.id);
    const across = web.filter((s) => s.epic_id && teamEpics.has(s.epic_id));
    const stay = web.filter((s) => !across.includes(s));
    // Two in the team's epics, one in an epic only the web team's stories are in, one in none.
    expect([across.length, stay.length]).toEqual([2, 2]);
    const epics = w().epics.filter((e) => teamEpics.has(e.id));
    const epicFiles = epics.flatMap((e) => e.files_for_fake ?? []);
    expect(epicFiles.length).toBeGreaterThan(0);

    const dry = await dryRunShortcutImport(ctx(), { apiToken: sc.token, team: "@mobile" });
    expect(dry.counts).toMatchObject({ issues: team.length + epics.length + across.length, filesCopied: team.reduce((n, s) => n + s.files!.length, 0) + epicFiles.length });

    const started = await startShortcutImport(ctx(), { apiToken: sc.token, team: "@mobile", newProject: { prefix: "MOB" } });
    const status = await finishRun(services, ctx(), started.runId);
    expect(status).toMatchObject({ phase: "done", error: null, counts: { created: team.length + epics.length + across.length } });

    const got = await snapshotProject(services, org.orgId, "MOB");
    const ident = await identifiersBySourceId(services, org.orgId);
    const key = (kind: "story" | "epic", id: number) => ident.get(`shortcut:acme:${kind}:${id}`);
    for (const s of across) {
      const mine = got.get(key("story", s.id)!)!;
      expect(mine, `sc-${s.id}`).toBeDefined();
      expect(mine.parent, `sc-${s.id}`).toBe(key("epic", s.epic_id!));
      expect(mine.comments.map((c) => c.body)).toEqual(s.comments!.map((c) => c.text));
    }
    for (const s of stay) expect(key("story", s.id), `sc-${s.id}`).toBeUndefined();
    // Links across the teams, from their subject's side, whichever team the subject is in.
    for (const s of [...team, ...across]) {
      const links = s.story_links!.filter((l) => l.type === "subject" && key("story", l.object_id));
      const verb: Record<string, string> = { blocks: "blocks", duplicates: "duplicate", "relates to": "related" };
      expect(got.get(key("story", s.id)!)!.relations.sort(), `sc-${s.id}`).toEqual(links.map((l) => `${verb[l.verb]}:${key("story", l.object_id)}`).sort());
    }
    expect(across.some((s) => s.story_links!.some((l) => l.type === "subject"))).toBe(true);
    expect(across.some((s) => s.story_links!.some((l) => l.type === "object"))).toBe(true);

    for (const e of epics) {
      const mine = got.get(key("epic", e.id)!)!;
      expect(mine.work, `epic ${e.id}`).toBe(false);
      expect(mine.attachments.map((a) => a.url).sort(), `epic ${e.id}`).toEqual((e.files_for_fake ?? []).map((f) => `file:sha256:${sha256Hex(sc.files.get(f.id)!)}`).sort());
      if (!e.files_for_fake?.length) continue;
      // The text names the files here; the link to another host stays as it was.
      expect(mine.body).toMatch(/\/dash\/attachments\/[0-9a-f-]+/);
      expect(mine.body).not.toContain(sc.origin);
      expect(mine.body).toContain("https://example.com/epic-");
      expect(mine.comments.some((c) => /\/dash\/attachments\//.test(c.body))).toBe(true);
    }
    const epicPaths = epicFiles.map((f) => `/api/attachments/files/clubhouse-assets/${f.id}/`);
    const fetched = sc.fileRequests.filter((r) => epicPaths.some((p) => r.path.startsWith(p)));
    expect(fetched.length).toBe(epicFiles.length);
    expect(fetched.every((r) => r.withToken)).toBe(true);

    const again = await startShortcutImport(ctx(), { apiToken: sc.token, team: "mobile", projectId: status.projectId });
    const total = team.length + epics.length + across.length;
    expect(await finishRun(services, ctx(), again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, unchanged: total, filesCopied: 0 } });
    expect((await snapshotProject(services, org.orgId, "MOB")).size).toBe(total);
  }, 120_000);
});
