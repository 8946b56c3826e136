import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import { generateClickUpWorkspace, startFakeClickUp, type FakeClickUp } from "../../../test/fakes/clickup.ts";
import type { RetascEvent, Services } from "../../context.ts";
import { endOfDayIn } from "../../issues/levels.ts";
import { renderHtml } from "../../markdown/render.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { waitFor } from "../../testing/wait.ts";
import { sha256Hex, snapshotProject } from "../linear/testing.ts";
import { applyImportRun } from "../pipeline/apply-run.ts";
import { importStatus } from "../pipeline/status.ts";
import { identifiersBySourceId, finishRun } from "../pipeline/testing.ts";
import { clickupFileHost } from "./client.ts";
import { clickupLocation, type ClickUpTask } from "./fetch.ts";
import { clickupPriority, clickupStatus } from "./normalize.ts";
import { dryRunClickUpImport, listClickUpLocations, startClickUpImport } from "./index.ts";

/**
 * The ClickUp import against a local server answering ClickUp's API v2 shapes over real HTTP: a
 * List's tasks in pages of 100 with their subtasks two levels deep, each read whole, comments
 * past a page of 25 with threaded replies, dependencies and links on both tasks, uploads on
 * ClickUp's host fetched with the token, a 429 waited out by X-RateLimit-Reset and shown, a 503
 * retried; then the real pipeline, checked task by task against the fake's data; a Space read
 * List by List; an apply killed half way and resumed.
 */
const env = useTestServices();
let cu: FakeClickUp;
let services: Services;
let org: SeededOrg;
const events: RetascEvent[] = [];

beforeAll(async () => {
  cu = await startFakeClickUp({ workspace: generateClickUpWorkspace({ tasks: 130 }) });
  const base = servicesFor(env.tdb.database, { config: testConfig({ CLICKUP_API_URL: cu.url, RETASC_IMPORT_ALLOW_HOSTS: new URL(cu.url).host }) });
  services = { ...base, events: { publish: async (tx, event) => { events.push(event); await base.events.publish(tx, event); } } };
  org = await seedOrg(services, { prefix: "MAIN" });
}, 60_000);
afterAll(() => cu?.close());

const ctxOf = (who: "alice" | "bob") => ({ ...org.agents[who].ctx, config: services.config });
const token = () => ({ apiToken: cu.token });
const w = () => cu.workspace;
const listTasks = () => w().tasks.filter((t) => t.list!.id === w().list.id);
/** A task's comments and their replies as [text, the comment replied to], oldest first. */
const threadOf = (t: ClickUpTask) =>
  w().comments.get(t.id)!
    .flatMap((c) => [[c.comment_text, null, c.date] as const, ...(w().replies.get(c.id) ?? []).map((r) => [r.comment_text, c.comment_text, r.date] as const)])
    .sort((a, b) => Number(a[2]) - Number(b[2]))
    .map(([text, parent]) => [text, parent]);
const onHost = (t: ClickUpTask) => t.attachments!.filter((a) => a.url.startsWith(cu.origin));
const elsewhere = (t: ClickUpTask) => t.attachments!.filter((a) => !a.url.startsWith(cu.origin));
const blocks = (t: ClickUpTask) => t.dependencies!.filter((d) => d.depends_on === t.id);
const links = (t: ClickUpTask) => t.linked_tasks!.filter((l) => l.task_id === t.id && l.task_id < l.link_id);

const finish = (runId: string, ctx = ctxOf("alice")) => finishRun(services, ctx, runId);

describe("the ClickUp import", () => {
  let projectId: string;

  it("refuses a wrong token with what to fix, a location it cannot read, and members; lists the Spaces and Lists the token sees", async () => {
    const wrong = await listClickUpLocations(ctxOf("alice"), { apiToken: "pk_0_NOT" }).catch((e: unknown) => e as Error & { code: string; hint: string });
    expect(wrong).toMatchObject({ code: "UNAUTHORIZED", message: "ClickUp refused the token", hint: expect.stringContaining("personal API token") });
    expect(JSON.stringify(wrong)).not.toContain(cu.token);
    await expect(listClickUpLocations(ctxOf("bob"), token())).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(dryRunClickUpImport(ctxOf("alice"), { ...token(), location: "javascript:alert(1)" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(dryRunClickUpImport(ctxOf("alice"), { ...token(), location: "list:999" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    const found = await listClickUpLocations(ctxOf("alice"), token());
    expect(found.map((l) => [l.location, l.name, l.issueCount, l.lastImportAt])).toEqual([
      [`space:${w().space.id}`, "Product", 142, null],
      [`list:${w().list.id}`, "Roadmap", 130, null],
      [`list:${w().folderList.id}`, "Incidents", 12, null],
      [`list:${w().emptyList.id}`, "Someday", 0, null],
    ]);
    expect(clickupLocation(`https://app.clickup.com/${w().team.id}/v/li/${w().list.id}`)).toEqual({ kind: "list", id: w().list.id });
    expect(clickupLocation(`https://app.clickup.com/${w().team.id}/v/s/${w().space.id}`)).toEqual({ kind: "space", id: w().space.id });
    expect(clickupFileHost("https://api.clickup.com/api/v2", "https://t123.p.clickup-attachments.com/t123/x/a.png")).toBe(true);
    expect(clickupFileHost("https://api.clickup.com/api/v2", "https://clickup-attachments.com.evil.example/a.png")).toBe(false);
  });

  it("a dry run lists the counts, the status and priority mapping, the people to be ghosted and what stays behind, and writes nothing", async () => {
    const before = await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`);
    const report = await dryRunClickUpImport(ctxOf("alice"), { ...token(), location: `https://app.clickup.com/${w().team.id}/v/li/${w().list.id}`, mapping: { statuses: { review: "done" } } });
    const tasks = listTasks();
    expect(report.counts).toMatchObject({
      issues: tasks.length,
      containers: new Set(tasks.map((t) => t.parent).filter(Boolean)).size,
      comments: tasks.reduce((n, t) => n + threadOf(t).length, 0),
      attachments: tasks.reduce((n, t) => n + t.attachments!.length, 0),
      filesCopied: tasks.reduce((n, t) => n + onHost(t).length, 0),
      linksKept: tasks.reduce((n, t) => n + elsewhere(t).length, 0),
      relations: tasks.reduce((n, t) => n + blocks(t).length + links(t).length, 0),
      labels: 2,
    });
    expect(report.statuses.find((s) => s.from === "review")).toMatchObject({ to: "done" });
    expect(report.statuses.find((s) => s.from === "in progress")).toMatchObject({ to: "doing" });
    expect(report.statuses.find((s) => s.from === "won't do")).toMatchObject({ to: "canceled" });
    expect(report.statuses.find((s) => s.from === "complete")).toMatchObject({ to: "done" });
    expect(report.statuses.find((s) => s.from === "to do")).toMatchObject({ to: "todo" });
    expect(report.priorities.find((s) => s.from === "urgent")).toMatchObject({ to: 1 });
    expect(report.priorities.find((s) => s.from === "low")).toMatchObject({ to: 4 });
    expect(report.ghosts.map((g) => g.name).sort()).toEqual(w().members.map((m) => m.username).sort());
    expect(report.leftBehind.join(" ")).toMatch(/custom fields/);
    // A Space reads each of its Lists.
    const space = await dryRunClickUpImport(ctxOf("alice"), { ...token(), location: `space:${w().space.id}` });
    expect(space.counts.issues).toBe(w().tasks.length);
    expect(await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`)).toEqual(before);
  }, 120_000);

  it("imports the List task by task, parents as containers, through a 429 waited out and shown and a 503 retried", async () => {
    // ClickUp names the second its window reopens (X-RateLimit-Reset), no Retry-After: the wait is until then, not a guess.
    cu.failAt(5, { status: 429, retryAfterSeconds: 3 });
    cu.failAt(40, { status: 503 });
    const before = cu.failures;
    const started = await startClickUpImport(ctxOf("alice"), { ...token(), location: `list:${w().list.id}`, newProject: { prefix: "CLK" } });
    expect(started).toMatchObject({ location: `list:${w().list.id}`, total: 130 });
    const status = await finish(started.runId);
    const tasks = listTasks();
    const files = tasks.flatMap(onHost);
    expect(status).toMatchObject({ phase: "done", error: null, source: "clickup", counts: { created: tasks.length, updated: 0, unchanged: 0, filesCopied: files.length, linksKept: tasks.flatMap(elsewhere).length } });
    projectId = status.projectId;
    expect(cu.failures - before).toBe(2);
    expect(events.some((e) => e.kind === "import.progress" && e.runId === started.runId && e.waitSeconds === 3)).toBe(true);
    expect(cu.fileRequests.length).toBe(files.length);
    expect(cu.fileRequests.every((r) => r.withToken)).toBe(true);

    const got = await snapshotProject(services, org.orgId, "CLK");
    const ident = await identifiersBySourceId(services, org.orgId);
    const key = (id: string) => ident.get(`clickup:task:${id}`)!;
    expect(got.size).toBe(tasks.length);
    const parents = new Set(tasks.map((t) => t.parent).filter(Boolean));
    for (const t of tasks) {
      const mine = got.get(key(t.id))!;
      expect(mine, t.id).toBeDefined();
      expect(mine.title, t.id).toBe(t.name);
      expect(mine.status, t.id).toBe(clickupStatus(t.status.status, t.status.type));
      expect(mine.priority, t.id).toBe(clickupPriority(t.priority?.priority));
      const due = t.due_date ? new Date(Number(t.due_date)).toISOString().slice(0, 10) : null;
      expect(mine.dueAt, t.id).toBe(due ? endOfDayIn(due, "UTC").toISOString() : null);
      expect(mine.parent, t.id).toBe(t.parent ? key(t.parent) : null);
      expect(mine.work, t.id).toBe(!parents.has(t.id));
      expect(mine.author, t.id).toBe(t.creator!.username);
      expect(mine.assignee, t.id).toBe(t.assignees![0]?.username ?? null);
      expect(mine.createdAt, t.id).toBe(new Date(Number(t.date_created)).toISOString());
      expect(mine.estimate, t.id).toBe(t.points ?? null);
      expect(mine.labels, t.id).toEqual(t.tags!.map((l) => `${l.name}:${l.tag_bg ? l.tag_bg.toLowerCase() : "#6b778c"}`).sort());
      expect(mine.comments.map((c) => [c.body, c.parent]), t.id).toEqual(threadOf(t));
      expect(mine.attachments.map((a) => a.url), t.id).toEqual(t.attachments!.map((a) => (a.url.startsWith(cu.origin) ? `file:sha256:${sha256Hex(cu.files.get(a.id)!)}` : a.url)));
      expect(mine.relations, t.id).toEqual([...blocks(t).map((d) => `blocks:${key(d.task_id)}`), ...links(t).map((l) => `related:${key(l.link_id)}`)].sort());
      if (t.checklists!.length > 0) expect(mine.body, t.id).toContain("**Release**\n- [x] Write the test\n- [ ] Ship it");
    }
    const mine = [...got.values()];
    expect(new Set(mine.map((i) => i.status))).toEqual(new Set(["todo", "doing", "done", "canceled"]));
    expect(new Set(mine.map((i) => i.priority))).toEqual(new Set([0, 1, 2, 3, 4]));
    expect(tasks.some((t) => w().comments.get(t.id)!.length > 25)).toBe(true);
    expect(mine.some((i) => i.comments.some((c) => c.parent))).toBe(true);
    expect(mine.some((i) => i.parent && got.get(i.parent)!.parent)).toBe(true);
    const ghosts = await query<{ source_user_id: string; email_hash: string | null }>(services.db, sql`select source_user_id, email_hash from import_ghosts where org_id = ${org.orgId} and source = 'clickup'`);
    expect(ghosts.map((g) => g.source_user_id).sort()).toEqual(w().members.map((m) => `clickup:user:${m.id}`).sort());
    expect(ghosts.filter((g) => g.email_hash).length).toBe(w().members.filter((m) => m.email).length);
  }, 300_000);

  it("keeps hostile task text inert: its Markdown renders without script, handlers or script links", async () => {
    const got = await snapshotProject(services, org.orgId, "CLK");
    const hostile = [...got.values()].find((i) => i.title.startsWith("<img"))!;
    const html = renderHtml(hostile.body!);
    expect(html).not.toMatch(/<script|<img|href="javascript|<[a-z][^>]*\son\w+=/i);
    expect(html).toContain("&lt;script&gt;");
  });

  it("a second run reconciles: nothing changed writes nothing and fetches no file again; a change is applied in place, comments not doubled", async () => {
    const fetched = cu.fileRequests.length;
    const total = listTasks().length;
    const again = await startClickUpImport(ctxOf("alice"), { ...token(), location: w().list.id, projectId });
    expect(await finish(again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, unchanged: total, filesCopied: 0 } });
    expect(cu.fileRequests.length).toBe(fetched);
    const task = listTasks()[30]!;
    task.name = "Renamed in ClickUp";
    task.date_updated = String(Date.UTC(2026, 5, 1, 10));
    w().comments.get(task.id)!.unshift({ id: "99999999", comment_text: "A late comment", user: w().members[0]!, date: String(Date.UTC(2026, 5, 1, 11)), reply_count: 0 });
    const changed = await startClickUpImport(ctxOf("alice"), { ...token(), location: `list:${w().list.id}`, projectId });
    expect(await finish(changed.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 1, unchanged: total - 1 } });
    const got = await snapshotProject(services, org.orgId, "CLK");
    expect(got.size).toBe(total);
    const ident = await identifiersBySourceId(services, org.orgId);
    const mine = got.get(ident.get(`clickup:task:${task.id}`)!)!;
    expect(mine.title).toBe("Renamed in ClickUp");
    expect(mine.comments.map((c) => c.body)).toEqual(threadOf(task).map(([body]) => body));
    expect(mine.comments.at(-1)!.body).toBe("A late comment");
    const counted = await query<{ n: number }>(services.db, sql`select count(*)::int as n from comments c join issues i on i.id = c.issue_id join projects p on p.id = i.project_id where p.prefix = 'CLK' and c.org_id = ${org.orgId}`);
    expect(counted[0]!.n).toBe(listTasks().reduce((n, t) => n + threadOf(t).length, 0));
  }, 300_000);

  it("an apply killed half way resumes to the same project, nothing doubled", async () => {
    const other = await seedOrg(services, { prefix: "MAIN" });
    const ctx = { ...other.agents.alice.ctx, config: services.config };
    // The crash: the second page's transaction fails as it commits its progress, as a worker killed there would leave it.
    await services.db.execute(sql.raw(`create or replace function crash_second_clickup_page() returns trigger language plpgsql as $$ begin if new.pages_applied = 2 and new.org_id = '${other.orgId}' then raise exception 'worker killed'; end if; return new; end $$`));
    await services.db.execute(sql.raw(`create trigger crash_second_clickup_page before update on linear_import_runs for each row execute function crash_second_clickup_page()`));
    const { runId } = await startClickUpImport(ctx, { ...token(), location: `list:${w().list.id}`, newProject: { prefix: "KIL" } });
    await waitFor(async () => ((await importStatus(ctx, { runId })).phase !== "fetching" ? true : null), 120_000, "staged");
    await expect(applyImportRun(services, runId)).rejects.toThrow();
    const [stopped] = await query<{ pages_applied: number; phase: string }>(services.db, sql`select pages_applied, phase from linear_import_runs where id = ${runId}`);
    expect(stopped).toEqual({ pages_applied: 1, phase: "applying" });
    await services.db.execute(sql`drop trigger crash_second_clickup_page on linear_import_runs`);
    const total = listTasks().length;
    expect(await finish(runId, ctx)).toMatchObject({ phase: "done", counts: { created: total } });
    const got = await snapshotProject(services, other.orgId, "KIL");
    expect(got.size).toBe(total);
    expect([...got.values()].reduce((n, i) => n + i.comments.length, 0)).toBe(listTasks().reduce((n, t) => n + threadOf(t).length, 0));
  }, 300_000);

  it("keeps the token nowhere: not in any table or event", async () => {
    const tables = await query<{ table_name: string }>(services.db, sql`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`);
    for (const { table_name } of tables) {
      const [row] = await query<{ dump: string | null }>(services.db, sql`select string_agg(t::text, '') as dump from ${sql.identifier(table_name)} t`);
      expect(row!.dump ?? "", table_name).not.toContain(cu.token);
    }
    expect(JSON.stringify(events)).not.toContain(cu.token);
  });

  it("the owner's mapping overrides statuses and priorities by ClickUp's names", () => {
    expect(clickupStatus("review", "custom", { statuses: { review: "done" } })).toBe("done");
    expect(clickupStatus("Canceled", "closed")).toBe("canceled");
    expect(clickupStatus("backlog", "open")).toBe("todo");
    expect(clickupPriority("normal", { priorities: { normal: 1 } })).toBe(1);
    expect(clickupPriority("whatever")).toBe(0);
  });
});
