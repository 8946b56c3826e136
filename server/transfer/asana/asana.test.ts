import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import { allAsanaTasks, generateAsanaProject, startFakeAsana, type FakeAsana } from "../../../test/fakes/asana.ts";
import type { RetascEvent, Services } from "../../context.ts";
import { endOfDayIn } from "../../issues/levels.ts";
import { renderHtml } from "../../markdown/render.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { sha256Hex, snapshotProject } from "../linear/testing.ts";
import { identifiersBySourceId, finishRun } from "../pipeline/testing.ts";
import { asanaPriority, asanaStatus, COMPLETED, NO_SECTION } from "./normalize.ts";
import { dryRunAsanaImport, listAsanaProjects, startAsanaImport } from "./index.ts";
import { asanaRichText } from "./rich-text.ts";

/**
 * The Asana import against a local server answering Asana's REST shapes over real HTTP: offset
 * pages, subtasks two levels deep, comments past a page of stories, stored files fetched by a
 * signed url without the token, a 429 waited out and shown, a 503 retried; then the real
 * pipeline, checked task by task against the fake's data.
 */
const env = useTestServices();
let asana: FakeAsana;
let services: Services;
let org: SeededOrg;
const events: RetascEvent[] = [];
const fast = { sleep: async () => {} };

beforeAll(async () => {
  asana = await startFakeAsana({ project: generateAsanaProject({ tasks: 130 }) });
  const base = servicesFor(env.tdb.database, { config: testConfig({ ASANA_API_URL: asana.url, RETASC_IMPORT_ALLOW_HOSTS: new URL(asana.url).host }) });
  services = { ...base, events: { publish: async (tx, event) => { events.push(event); await base.events.publish(tx, event); } } };
  org = await seedOrg(services, { prefix: "MAIN" });
}, 60_000);
afterAll(() => asana?.close());

const ctxOf = (who: "alice" | "bob") => ({ ...org.agents[who].ctx, config: services.config });
const token = () => ({ accessToken: asana.token });
const sectionOf = (t: { memberships?: { section?: { name: string } | null }[] }) => t.memberships?.[0]?.section?.name ?? NO_SECTION;
const priorityOf = (t: { custom_fields?: { name: string; enum_value?: { name: string } | null }[] }) => t.custom_fields?.find((f) => f.name === "Priority")?.enum_value?.name;

const finish = (runId: string) => finishRun(services, ctxOf("alice"), runId);

describe("the Asana import", () => {
  let projectId: string;
  const all = () => allAsanaTasks(asana.project);
  const comments = (gid: string) => asana.project.stories.get(gid)!.filter((s) => s.resource_subtype === "comment_added");

  it("refuses a wrong token with what to fix, and members; lists the projects the token sees", async () => {
    const wrong = await listAsanaProjects(ctxOf("alice"), { accessToken: "0/not-the-token" }).catch((e: unknown) => e as Error & { code: string; hint: string });
    expect(wrong).toMatchObject({ code: "UNAUTHORIZED", message: "Asana refused the token", hint: expect.stringContaining("personal access token") });
    expect(JSON.stringify(wrong)).not.toContain(asana.token);
    await expect(listAsanaProjects(ctxOf("bob"), token())).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(dryRunAsanaImport(ctxOf("alice"), { ...token(), projectGid: "javascript:alert(1)" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(dryRunAsanaImport(ctxOf("alice"), { ...token(), projectGid: "999" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(await listAsanaProjects(ctxOf("alice"), token())).toEqual([
      { id: asana.project.gid, name: "Launch plan", workspace: "Acme", issueCount: 130, lastImportAt: null },
      { id: "1000000000000002", name: "Empty board", workspace: "Acme", issueCount: 0, lastImportAt: null },
    ]);
  });

  it("a dry run lists the counts, the section and priority mapping, the people to be ghosted and what stays behind, and writes nothing", async () => {
    const before = await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`);
    // A pasted project URL names the project as well as its gid.
    const report = await dryRunAsanaImport(ctxOf("alice"), { ...token(), projectGid: `https://app.asana.com/0/${asana.project.gid}/list`, mapping: { statuses: { Review: "done" } } }, fast);
    const tasks = all();
    const attachments = [...asana.project.attachments.values()].flat();
    expect(report.counts).toMatchObject({
      issues: tasks.length,
      containers: asana.project.subtasks.size,
      comments: tasks.reduce((n, t) => n + comments(t.gid).length, 0),
      attachments: attachments.length,
      filesCopied: attachments.filter((a) => a.host === "asana").length,
      linksKept: attachments.filter((a) => a.host !== "asana").length,
      relations: tasks.reduce((n, t) => n + t.dependents!.length, 0),
      labels: 2,
    });
    expect(report.linkReasons).toEqual({ link: attachments.filter((a) => a.host !== "asana").length });
    expect(report.known).toEqual({ issues: 0, comments: 0 });
    expect(report.statuses.find((s) => s.from === "Review")).toMatchObject({ to: "done" });
    expect(report.statuses.find((s) => s.from === "In Progress")).toMatchObject({ to: "doing" });
    expect(report.statuses.find((s) => s.from === "Won't do")).toMatchObject({ to: "canceled" });
    expect(report.statuses.find((s) => s.from === COMPLETED)).toMatchObject({ to: "done" });
    expect(report.priorities.find((s) => s.from === "Urgent")).toMatchObject({ to: 1 });
    expect(report.priorities.find((s) => s.from === "Low")).toMatchObject({ to: 4 });
    expect(report.ghosts.map((g) => g.name).sort()).toEqual(asana.project.users.map((u) => u.name).sort());
    expect(report.leftBehind.join(" ")).toMatch(/followers/);
    expect(await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`)).toEqual(before);
  }, 120_000);

  it("imports the project task by task through a 429 waited out and shown and a 503 retried", async () => {
    asana.failAt(5, { status: 429, retryAfterSeconds: 1 });
    asana.failAt(9, { status: 503 });
    const before = asana.failures;
    const started = await startAsanaImport(ctxOf("alice"), { ...token(), projectGid: asana.project.gid, newProject: { name: "Launch", prefix: "LNC" } });
    expect(started).toMatchObject({ projectGid: asana.project.gid, total: 130 });
    const status = await finish(started.runId);
    const tasks = all();
    const stored = [...asana.project.attachments.values()].flat().filter((a) => a.host === "asana");
    expect(status).toMatchObject({ phase: "done", error: null, source: "asana", counts: { created: tasks.length, updated: 0, unchanged: 0, filesCopied: stored.length, linksKept: [...asana.project.attachments.values()].flat().filter((a) => a.host !== "asana").length } });
    projectId = status.projectId;
    expect(asana.failures - before).toBe(2);
    expect(events.some((e) => e.kind === "import.progress" && e.runId === started.runId && e.waitSeconds === 1)).toBe(true);
    // Stored files came by their signed urls, each once, and the token never went along.
    expect(asana.fileRequests.map((r) => r.path).sort()).toEqual(stored.map((a) => `/storage/assets/${a.gid}`).sort());
    expect(asana.fileRequests.some((r) => r.withToken)).toBe(false);

    const got = await snapshotProject(services, org.orgId, "LNC");
    const ident = await identifiersBySourceId(services, org.orgId);
    const key = (gid: string) => ident.get(`asana:task:${gid}`)!;
    expect(got.size).toBe(tasks.length);
    const parents = new Set(tasks.map((t) => t.parent?.gid).filter(Boolean));
    for (const t of tasks) {
      const mine = got.get(key(t.gid))!;
      expect(mine, t.gid).toBeDefined();
      expect(mine.title, t.gid).toBe(t.name);
      expect(mine.status, t.gid).toBe(asanaStatus(t.completed ? COMPLETED : sectionOf(t)));
      expect(mine.priority, t.gid).toBe(asanaPriority(priorityOf(t)));
      const due = t.due_on ?? t.due_at?.slice(0, 10) ?? null;
      expect(mine.dueAt, t.gid).toBe(due ? endOfDayIn(due, "UTC").toISOString() : null);
      expect(mine.parent, t.gid).toBe(t.parent ? key(t.parent.gid) : null);
      expect(mine.work, t.gid).toBe(!parents.has(t.gid));
      expect(mine.author, t.gid).toBe(t.created_by?.name ?? null);
      expect(mine.assignee, t.gid).toBe(t.assignee?.name ?? null);
      expect(mine.createdAt, t.gid).toBe(t.created_at);
      expect(mine.labels, t.gid).toEqual((t.tags ?? []).map((l) => `${l.name}:${l.color === "dark-blue" ? "#4573d2" : "#6b778c"}`).sort());
      expect(mine.comments.map((c) => [c.body, c.createdAt, c.author]), t.gid).toEqual(comments(t.gid).map((c) => [c.html_text ? asanaRichText(c.html_text) : c.text, c.created_at, c.created_by!.name]));
      expect(mine.attachments.map((a) => a.url), t.gid).toEqual(asana.project.attachments.get(t.gid)!.map((a) => (a.host === "asana" ? `file:sha256:${sha256Hex(asana.files.get(a.gid)!)}` : a.view_url)));
      expect(mine.relations, t.gid).toEqual(t.dependents!.map((d) => `blocks:${key(d.gid)}`).sort());
    }
    const mine = [...got.values()];
    expect(new Set(mine.map((i) => i.status))).toEqual(new Set(["todo", "doing", "done", "canceled"]));
    expect(new Set(mine.map((i) => i.priority))).toEqual(new Set([0, 1, 2, 3, 4]));
    expect(tasks.some((t) => comments(t.gid).length > 100)).toBe(true);
    expect(mine.filter((i) => !i.work).length).toBeGreaterThan(10);
    expect(mine.some((i) => i.parent && got.get(i.parent)!.parent)).toBe(true);
    expect(mine.reduce((n, i) => n + i.relations.length, 0)).toBeGreaterThan(20);
    // People with an email Asana gave are placeholders claimable by it.
    const ghosts = await query<{ source_user_id: string; email_hash: string | null }>(services.db, sql`select source_user_id, email_hash from import_ghosts where org_id = ${org.orgId} and source = 'asana'`);
    expect(ghosts.map((g) => g.source_user_id).sort()).toEqual(asana.project.users.map((u) => `asana:user:${u.gid}`).sort());
    expect(ghosts.filter((g) => g.email_hash).length).toBe(asana.project.users.filter((u) => u.email).length);
  }, 300_000);

  it("keeps hostile task text inert: its Markdown renders without script, handlers or script links", async () => {
    const got = await snapshotProject(services, org.orgId, "LNC");
    const hostile = [...got.values()].find((i) => i.title.startsWith("<img"))!;
    expect(hostile.title).toMatch(/^<img src=x onerror=alert\(\d+\)> Hostile/);
    const html = renderHtml(hostile.body!);
    expect(html).not.toMatch(/<script|<img|<a [^>]*href="javascript|<[a-z][^>]*\son\w+=/i);
    expect(html).toContain("&lt;script&gt;");
    expect(html).not.toContain("alert(4)");
  });

  it("brings a task's rich text over as Markdown: marks, lists and links, not the plain text", async () => {
    const got = await snapshotProject(services, org.orgId, "LNC");
    const ident = await identifiersBySourceId(services, org.orgId);
    const task = asana.project.tasks[0]!;
    const body = got.get(ident.get(`asana:task:${task.gid}`)!)!.body!;
    expect(body).toBe(`Notes of **${task.name}**\n\n- step one\n- step [two](https://example.com/1)`);
    expect(renderHtml(body)).toMatch(/<strong>Task 1<\/strong>[\s\S]*<ul>\s*<li>step one<\/li>/);
  });

  it("a second run reconciles: nothing changed writes nothing and fetches no file again; a change is applied in place", async () => {
    const fetched = asana.fileRequests.length;
    const again = await startAsanaImport(ctxOf("alice"), { ...token(), projectGid: asana.project.gid, projectId }, fast);
    const total = all().length;
    expect(await finish(again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, unchanged: total, filesCopied: 0 } });
    expect(asana.fileRequests.length).toBe(fetched);
    const task = asana.project.tasks[20]!;
    task.name = "Renamed in Asana";
    task.modified_at = "2026-06-01T10:00:00.000Z";
    asana.project.stories.get(task.gid)!.push({ gid: "1699999999999999", type: "comment", resource_subtype: "comment_added", text: "A late comment", created_at: "2026-06-01T11:00:00.000Z", created_by: asana.project.users[0]! });
    const changed = await startAsanaImport(ctxOf("alice"), { ...token(), projectGid: asana.project.gid, projectId }, fast);
    expect(await finish(changed.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 1, unchanged: total - 1 } });
    const got = await snapshotProject(services, org.orgId, "LNC");
    expect(got.size).toBe(total);
    const ident = await identifiersBySourceId(services, org.orgId);
    const mine = got.get(ident.get(`asana:task:${task.gid}`)!)!;
    expect(mine.title).toBe("Renamed in Asana");
    expect(mine.comments.map((c) => c.body)).toEqual([...comments(task.gid).map((c) => (c.html_text ? asanaRichText(c.html_text) : c.text))]);
    expect(mine.comments.at(-1)!.body).toBe("A late comment");
    const counted = await query<{ n: number }>(services.db, sql`select count(*)::int as n from comments c join issues i on i.id = c.issue_id join projects p on p.id = i.project_id where p.prefix = 'LNC' and c.org_id = ${org.orgId}`);
    expect(counted[0]!.n).toBe(all().reduce((n, t) => n + comments(t.gid).length, 0));
  }, 300_000);

  it("keeps the token nowhere: not in any table or event", async () => {
    const tables = await query<{ table_name: string }>(services.db, sql`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`);
    for (const { table_name } of tables) {
      const [row] = await query<{ dump: string | null }>(services.db, sql`select string_agg(t::text, '') as dump from ${sql.identifier(table_name)} t`);
      expect(row!.dump ?? "", table_name).not.toContain(asana.token);
    }
    expect(JSON.stringify(events)).not.toContain(asana.token);
  });

  it("the owner's mapping overrides sections and priorities by Asana's names", () => {
    expect(asanaStatus("Review", { statuses: { Review: "done" } })).toBe("done");
    expect(asanaStatus(COMPLETED, { statuses: { [COMPLETED]: "canceled" } })).toBe("canceled");
    expect(asanaStatus("Backlog")).toBe("todo");
    expect(asanaPriority("Medium", { priorities: { Medium: 1 } })).toBe(1);
    expect(asanaPriority("Whatever")).toBe(0);
  });
});
