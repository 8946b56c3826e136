import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import { generateShortcutWorkspace, startFakeShortcut, type FakeShortcut } from "../../../test/fakes/shortcut.ts";
import type { RetascEvent, Services } from "../../context.ts";
import { endOfDayIn } from "../../issues/levels.ts";
import { renderHtml } from "../../markdown/render.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { sha256Hex, snapshotProject } from "../linear/testing.ts";
import { identifiersBySourceId, finishRun } from "../pipeline/testing.ts";
import { shortcutFileOrigins } from "./client.ts";
import { shortcutPriority, shortcutStatus } from "./normalize.ts";
import { dryRunShortcutImport, listShortcutTeams, startShortcutImport } from "./index.ts";

/**
 * The Shortcut import against a local server answering Shortcut's REST v3 shapes over real
 * HTTP: a team's slim stories in offset pages, each story read whole, its epics read once, a 429
 * waited out and shown, a 503 retried; then the real pipeline, checked story by story and epic
 * by epic against the fake's data.
 */
const env = useTestServices();
let sc: FakeShortcut;
let services: Services;
let org: SeededOrg;
const events: RetascEvent[] = [];

beforeAll(async () => {
  sc = await startFakeShortcut({ workspace: generateShortcutWorkspace({ stories: 150 }) });
  const base = servicesFor(env.tdb.database, { config: testConfig({ SHORTCUT_API_URL: sc.url, RETASC_IMPORT_ALLOW_HOSTS: new URL(sc.url).host }) });
  services = { ...base, events: { publish: async (tx, event) => { events.push(event); await base.events.publish(tx, event); } } };
  org = await seedOrg(services, { prefix: "MAIN" });
}, 60_000);
afterAll(() => sc?.close());

const ctxOf = (who: "alice" | "bob") => ({ ...org.agents[who].ctx, config: services.config });
const token = () => ({ apiToken: sc.token });
const w = () => sc.workspace;
const epicsUsed = () => w().epics.filter((e) => w().stories.some((s) => s.epic_id === e.id));
const epicComments = (e: { comments?: { comments?: unknown[] }[] }) => (e.comments ?? []).reduce((n, c) => n + 1 + (c.comments?.length ?? 0), 0);
const stateOf = (id: number) => w().workflow.states.find((s) => s.id === id)!;
const priorityOf = (s: { custom_fields?: { value: string }[] }) => s.custom_fields?.[0]?.value;
const person = (id: string | null | undefined) => (id ? w().members.find((m) => m.id === id)!.profile.name! : null);

const finish = (runId: string) => finishRun(services, ctxOf("alice"), runId);

describe("the Shortcut import", () => {
  let projectId: string;

  it("refuses a wrong token with what to fix, an unknown team, and members; lists the teams the token sees", async () => {
    const wrong = await listShortcutTeams(ctxOf("alice"), { apiToken: "not-the-token" }).catch((e: unknown) => e as Error & { code: string; hint: string });
    expect(wrong).toMatchObject({ code: "UNAUTHORIZED", message: "Shortcut refused the token", hint: expect.stringContaining("API token") });
    expect(JSON.stringify(wrong)).not.toContain(sc.token);
    await expect(listShortcutTeams(ctxOf("bob"), token())).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(dryRunShortcutImport(ctxOf("alice"), { ...token(), team: "nobody" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(await listShortcutTeams(ctxOf("alice"), token())).toEqual([
      { id: w().team.id, name: "Mobile", mentionName: "mobile", issueCount: 150, lastImportAt: null },
      { id: w().otherTeam.id, name: "Web", mentionName: "web", issueCount: 0, lastImportAt: null },
    ]);
    expect(shortcutFileOrigins("https://api.app.shortcut.com/api/v3")).toEqual(["https://api.app.shortcut.com", "https://media.app.shortcut.com"]);
  });

  it("a dry run lists the counts, the state and priority mapping, the people to be ghosted and what stays behind, and writes nothing", async () => {
    const before = await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`);
    const report = await dryRunShortcutImport(ctxOf("alice"), { ...token(), team: "@mobile", mapping: { statuses: { "Ready for Review": "done" } } });
    const stories = w().stories;
    const epics = epicsUsed();
    expect(epics.length).toBe(6);
    expect(report.counts).toMatchObject({
      issues: stories.length + epics.length,
      containers: epics.length,
      comments: stories.reduce((n, s) => n + s.comments!.length, 0) + epics.reduce((n, e) => n + epicComments(e), 0),
      attachments: stories.reduce((n, s) => n + s.files!.length + s.linked_files!.length, 0),
      filesCopied: stories.reduce((n, s) => n + s.files!.length, 0),
      linksKept: stories.reduce((n, s) => n + s.linked_files!.length, 0),
      relations: stories.reduce((n, s) => n + s.story_links!.filter((l) => l.type === "subject").length, 0),
      labels: 2,
    });
    expect(report.statuses.find((s) => s.from === "Ready for Review")).toMatchObject({ to: "done" });
    expect(report.statuses.find((s) => s.from === "In Development")).toMatchObject({ to: "doing" });
    expect(report.statuses.find((s) => s.from === "Backlog")).toMatchObject({ to: "todo" });
    expect(report.statuses.find((s) => s.from === "Completed")).toMatchObject({ to: "done" });
    expect(report.statuses.find((s) => s.from === "Epic: in progress")).toMatchObject({ to: "doing" });
    expect(report.priorities.find((s) => s.from === "Highest")).toMatchObject({ to: 1 });
    expect(report.ghosts.map((g) => g.name).sort()).toEqual(w().members.map((m) => m.profile.name).sort());
    expect(report.leftBehind.join(" ")).toMatch(/iterations/);
    expect(await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`)).toEqual(before);
  }, 120_000);

  it("imports the team story by story, epics as containers, through a 429 waited out and shown and a 503 retried", async () => {
    sc.failAt(6, { status: 429, retryAfterSeconds: 1 });
    sc.failAt(40, { status: 503 });
    const before = sc.failures;
    const started = await startShortcutImport(ctxOf("alice"), { ...token(), team: w().team.id, newProject: { prefix: "MOB" } });
    expect(started).toMatchObject({ teamId: w().team.id, total: 150 });
    const status = await finish(started.runId);
    const stories = w().stories;
    const epics = epicsUsed();
    const files = stories.flatMap((s) => s.files!);
    expect(status).toMatchObject({ phase: "done", error: null, source: "shortcut", counts: { created: stories.length + epics.length, updated: 0, unchanged: 0, filesCopied: files.length, linksKept: stories.reduce((n, s) => n + s.linked_files!.length, 0) } });
    projectId = status.projectId;
    expect(sc.failures - before).toBe(2);
    expect(events.some((e) => e.kind === "import.progress" && e.runId === started.runId && e.waitSeconds === 1)).toBe(true);
    // Uploaded files came from Shortcut's own host with the token, each once.
    expect(sc.fileRequests.map((r) => r.path).sort()).toEqual(files.map((f) => new URL(f.url).pathname).sort());
    expect(sc.fileRequests.every((r) => r.withToken)).toBe(true);

    const got = await snapshotProject(services, org.orgId, "MOB");
    const ident = await identifiersBySourceId(services, org.orgId);
    const key = (kind: "story" | "epic", id: number) => ident.get(`shortcut:acme:${kind}:${id}`)!;
    expect(got.size).toBe(stories.length + epics.length);
    for (const s of stories) {
      const mine = got.get(key("story", s.id))!;
      const state = stateOf(s.workflow_state_id);
      expect(mine, `sc-${s.id}`).toBeDefined();
      expect(mine.title).toBe(s.name);
      expect(mine.status, `sc-${s.id}`).toBe(shortcutStatus(state.name, state.type));
      expect(mine.priority, `sc-${s.id}`).toBe(shortcutPriority(priorityOf(s)));
      expect(mine.dueAt, `sc-${s.id}`).toBe(s.deadline ? endOfDayIn(s.deadline.slice(0, 10), "UTC").toISOString() : null);
      expect(mine.parent, `sc-${s.id}`).toBe(s.epic_id ? key("epic", s.epic_id) : null);
      expect(mine.work, `sc-${s.id}`).toBe(true);
      expect(mine.author, `sc-${s.id}`).toBe(person(s.requested_by_id));
      expect(mine.assignee, `sc-${s.id}`).toBe(person(s.owner_ids![0]));
      expect(mine.estimate, `sc-${s.id}`).toBe(s.estimate ?? null);
      expect(mine.labels, `sc-${s.id}`).toEqual(s.labels!.map((l) => `${l.name}:${l.color ? l.color.toLowerCase() : "#6b778c"}`).sort());
      const byId = new Map(s.comments!.map((c) => [c.id, c]));
      expect(mine.comments.map((c) => [c.body, c.retracted, c.parent, c.author]), `sc-${s.id}`).toEqual(s.comments!.map((c) => [c.text, Boolean(c.deleted), c.parent_id ? byId.get(c.parent_id)!.text : null, person(c.author_id)]));
      expect(mine.attachments.map((a) => a.url), `sc-${s.id}`).toEqual([...s.files!.map((f) => `file:sha256:${sha256Hex(sc.files.get(f.id)!)}`), ...s.linked_files!.map((f) => f.url)]);
      const verb: Record<string, string> = { blocks: "blocks", duplicates: "duplicate", "relates to": "related" };
      expect(mine.relations, `sc-${s.id}`).toEqual(s.story_links!.filter((l) => l.type === "subject").map((l) => `${verb[l.verb]}:${key("story", l.object_id)}`).sort());
      if (s.tasks!.length > 0) expect(mine.body).toContain("- [x] Write the test\n- [ ] Ship it");
    }
    for (const e of epics) {
      const mine = got.get(key("epic", e.id))!;
      expect(mine.title).toBe(e.name);
      expect(mine.work, `epic ${e.id}`).toBe(false);
      expect(mine.status, `epic ${e.id}`).toBe({ "to do": "todo", "in progress": "doing", done: "done" }[e.state]);
      expect(mine.comments.map((c) => [c.body, c.parent]), `epic ${e.id}`).toEqual((e.comments ?? []).flatMap((c) => [[c.text, null], ...(c.comments ?? []).map((r) => [r.text, c.text])]));
    }
    const mine = [...got.values()];
    expect(new Set(mine.map((i) => i.status))).toEqual(new Set(["todo", "doing", "done"]));
    expect(new Set(mine.map((i) => i.priority))).toEqual(new Set([0, 1, 2, 3, 4]));
    expect(mine.some((i) => i.comments.some((c) => c.parent))).toBe(true);
    expect(mine.some((i) => i.comments.some((c) => c.retracted))).toBe(true);
    expect(new Set(mine.flatMap((i) => i.relations.map((r) => r.split(":")[0])))).toEqual(new Set(["blocks", "duplicate", "related"]));
    const ghosts = await query<{ source_user_id: string; email_hash: string | null }>(services.db, sql`select source_user_id, email_hash from import_ghosts where org_id = ${org.orgId} and source = 'shortcut'`);
    expect(ghosts.map((g) => g.source_user_id).sort()).toEqual(w().members.map((m) => `shortcut:acme:member:${m.id}`).sort());
    expect(ghosts.filter((g) => g.email_hash).length).toBe(w().members.filter((m) => m.profile.email_address).length);
  }, 300_000);

  it("keeps hostile story text inert: its Markdown renders without script, handlers or script links", async () => {
    const got = await snapshotProject(services, org.orgId, "MOB");
    const hostile = [...got.values()].find((i) => i.title.startsWith("<img"))!;
    const html = renderHtml(hostile.body!);
    expect(html).not.toMatch(/<script|<img|href="javascript|<[a-z][^>]*\son\w+=/i);
    expect(html).toContain("&lt;script&gt;");
  });

  it("a second run reconciles: nothing changed writes nothing and fetches no file again; a change is applied in place", async () => {
    const fetched = sc.fileRequests.length;
    const total = w().stories.length + epicsUsed().length;
    const again = await startShortcutImport(ctxOf("alice"), { ...token(), team: "Mobile", projectId });
    expect(await finish(again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, unchanged: total, filesCopied: 0 } });
    expect(sc.fileRequests.length).toBe(fetched);
    const story = w().stories[30]!;
    story.name = "Renamed in Shortcut";
    story.updated_at = "2026-06-01T10:00:00Z";
    story.comments!.push({ id: 99999, author_id: w().members[0]!.id, text: "A late reply", created_at: "2026-06-01T11:00:00Z", updated_at: "2026-06-01T11:00:00Z", parent_id: story.comments![0]?.id ?? null });
    const changed = await startShortcutImport(ctxOf("alice"), { ...token(), team: "mobile", projectId });
    expect(await finish(changed.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 1, unchanged: total - 1 } });
    const got = await snapshotProject(services, org.orgId, "MOB");
    expect(got.size).toBe(total);
    const ident = await identifiersBySourceId(services, org.orgId);
    const mine = got.get(ident.get(`shortcut:acme:story:${story.id}`)!)!;
    expect(mine.title).toBe("Renamed in Shortcut");
    expect(mine.comments.length).toBe(story.comments!.length);
    expect(mine.comments.at(-1)).toMatchObject({ body: "A late reply", parent: story.comments![0]!.id === 99999 ? null : story.comments![0]!.text });
  }, 300_000);

  it("keeps the token nowhere: not in any table or event", async () => {
    const tables = await query<{ table_name: string }>(services.db, sql`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`);
    for (const { table_name } of tables) {
      const [row] = await query<{ dump: string | null }>(services.db, sql`select string_agg(t::text, '') as dump from ${sql.identifier(table_name)} t`);
      expect(row!.dump ?? "", table_name).not.toContain(sc.token);
    }
    expect(JSON.stringify(events)).not.toContain(sc.token);
  });

  it("the owner's mapping overrides states and priorities by Shortcut's names", () => {
    expect(shortcutStatus("Ready for Review", "started", { statuses: { "Ready for Review": "done" } })).toBe("done");
    expect(shortcutStatus("Backlog", "backlog")).toBe("todo");
    expect(shortcutPriority("Medium", { priorities: { Medium: 1 } })).toBe(1);
    expect(shortcutPriority("Whatever")).toBe(0);
  });
});
