import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import type { RetascEvent, Services } from "../../context.ts";
import { endOfDayIn } from "../../issues/levels.ts";
import { renderHtml } from "../../markdown/render.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { generateJiraProject, startFakeJira, type FakeJira } from "../../../test/fakes/jira.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { sha256Hex, snapshotProject } from "../linear/testing.ts";
import { jiraPriority, jiraStatus } from "./normalize.ts";
import { dryRunJiraImport, listJiraProjects, startJiraImport } from "./index.ts";
import { finishRun } from "../pipeline/testing.ts";

/**
 * The Jira import through jira.js against a local server answering Jira Cloud's REST v3 shapes:
 * pages of the enhanced search, comments past the embedded 20, a 429 waited out and shown, a 503
 * retried, hostile ADF; then the real pipeline, checked item by item against the fake's data.
 */
const env = useTestServices();
let jira: FakeJira;
let services: Services;
let org: SeededOrg;
const events: RetascEvent[] = [];

beforeAll(async () => {
  jira = await startFakeJira({ project: generateJiraProject({ issues: 260, key: "JRA" }) });
  const base = servicesFor(env.tdb.database, { config: testConfig({ RETASC_IMPORT_ALLOW_HOSTS: new URL(jira.url).host }) });
  services = { ...base, events: { publish: async (tx, event) => { events.push(event); await base.events.publish(tx, event); } } };
  org = await seedOrg(services, { prefix: "MAIN" });
}, 60_000);
afterAll(() => jira?.close());

const ctxOf = (who: "alice" | "bob") => org.agents[who].ctx;
const creds = () => ({ site: jira.url, email: jira.email, apiToken: jira.apiToken });

/** The run to its end: staged by this process, applied as the `linear.apply` job does. */
const finish = (runId: string) => finishRun(services, ctxOf("alice"), runId);

describe("the Jira import", () => {
  let projectId: string;

  it("refuses a site the outbound guard would not call, a wrong token with what to fix, and members", async () => {
    const strict = { ...ctxOf("alice"), config: testConfig() };
    await expect(listJiraProjects(strict, creds())).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("site") });
    await expect(listJiraProjects(strict, { ...creds(), site: "https://10.0.0.5" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(listJiraProjects(strict, { ...creds(), site: "https://169.254.169.254" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(listJiraProjects(strict, { ...creds(), site: "https://localhost" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    const wrong = await listJiraProjects(ctxOf("alice"), { ...creds(), apiToken: "not-the-token" }).catch((e: unknown) => e as Error & { code: string; hint: string });
    expect(wrong).toMatchObject({ code: "UNAUTHORIZED", hint: expect.stringContaining("API token") });
    expect(JSON.stringify(wrong)).not.toContain(jira.apiToken);
    await expect(listJiraProjects(ctxOf("bob"), creds())).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(await listJiraProjects(ctxOf("alice"), creds())).toEqual([
      { id: "10001", key: "JRA", name: "Project JRA", issueCount: 260, lastImportAt: null },
      { id: "10002", key: "OTHER", name: "Other", issueCount: 0, lastImportAt: null },
    ]);
  });

  it("a dry run lists the counts, the status and priority mapping, the people to be ghosted and what stays behind, and writes nothing", async () => {
    const issuesBefore = await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`);
    const report = await dryRunJiraImport(ctxOf("alice"), { ...creds(), projectKey: "JRA", mapping: { statuses: { "In Review": "done" } } });
    const p = jira.project;
    expect(report.counts).toMatchObject({ issues: 260, comments: p.issues.reduce((n, i) => n + i.fields.comment!.comments.length, 0), attachments: p.issues.reduce((n, i) => n + (i.fields.attachment ?? []).length, 0) });
    expect(report.known).toEqual({ issues: 0, comments: 0 });
    expect(report.statuses.find((s) => s.from === "In Review")).toMatchObject({ to: "done" });
    expect(report.statuses.find((s) => s.from === "In Progress")).toMatchObject({ to: "doing" });
    expect(report.priorities.find((s) => s.from === "Highest")).toMatchObject({ to: 1 });
    expect(report.ghosts.map((g) => g.name).sort()).toEqual(p.users.map((u) => u.displayName).sort());
    const attachments = p.issues.reduce((n, i) => n + (i.fields.attachment ?? []).length, 0);
    expect(report.counts).toMatchObject({ filesCopied: attachments, linksKept: 0 });
    expect(report.leftBehind.join(" ")).toMatch(/sprints/);
    expect(await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`)).toEqual(issuesBefore);
  }, 120_000);

  it("imports the project item by item through a 429 waited out and shown and a 503 retried", async () => {
    jira.failAt(4, { status: 429, retryAfterSeconds: 1 });
    jira.failAt(6, { status: 503 });
    const before = jira.failures;
    const started = await startJiraImport(ctxOf("alice"), { ...creds(), projectKey: "JRA", newProject: { name: "Jira" } });
    expect(started).toMatchObject({ projectKey: "JRA", total: 260 });
    const status = await finish(started.runId);
    expect(status).toMatchObject({ phase: "done", error: null, source: "jira", counts: { created: 260, updated: 0, unchanged: 0 } });
    projectId = status.projectId;
    expect(jira.failures - before).toBe(2);
    const attachments = jira.project.issues.flatMap((i) => i.fields.attachment ?? []);
    expect(attachments.length).toBeGreaterThan(30);
    expect(status).toMatchObject({ counts: { filesCopied: attachments.length, linksKept: 0 }, linkReasons: {} });
    // Each file fetched once, with the credentials, from the site itself (no redirect to follow).
    expect(jira.fileRequests.map((r) => r.path).sort()).toEqual(attachments.map((a) => `/rest/api/3/attachment/content/${a.id}?redirect=false`).sort());
    expect(jira.fileRequests.every((r) => r.withCredentials)).toBe(true);
    expect(events.some((e) => e.kind === "import.progress" && e.runId === started.runId && e.waitSeconds === 1)).toBe(true);

    const got = await snapshotProject(services, org.orgId, "JRA");
    expect(got.size).toBe(260);
    const p = jira.project;
    const name = (u: { displayName?: string } | null | undefined) => u?.displayName ?? null;
    for (const i of p.issues) {
      const f = i.fields;
      const mine = got.get(i.key)!;
      expect(mine, i.key).toBeDefined();
      expect(mine.status, i.key).toBe(jiraStatus(i));
      expect(mine.priority, i.key).toBe(jiraPriority(f.priority?.name));
      expect(mine.dueAt, i.key).toBe(f.duedate ? endOfDayIn(f.duedate, "UTC").toISOString() : null);
      expect(mine.parent, i.key).toBe(f.parent?.key ?? null);
      expect(mine.work, i.key).toBe(!p.issues.some((c) => c.fields.parent?.id === i.id));
      expect(mine.author, i.key).toBe(name(f.reporter));
      expect(mine.assignee, i.key).toBe(name(f.assignee));
      expect(mine.createdAt, i.key).toBe(new Date(f.created).toISOString());
      expect(mine.labels, i.key).toEqual([...(f.labels ?? []), ...(f.components ?? []).map((c) => c.name)].map((l) => `${l}:#6b778c`).sort());
      expect(mine.comments.length, i.key).toBe(f.comment!.comments.length);
      // Files under the limit arrive as files with the same bytes.
      expect(mine.attachments.map((a) => a.url), i.key).toEqual((f.attachment ?? []).map((a) => `file:sha256:${sha256Hex(jira.files.get(a.id)!)}`));
      const outward = (f.issuelinks ?? []).filter((l) => l.outwardIssue).map((l) => `${{ Blocks: "blocks", Duplicate: "duplicate" }[l.type.name] ?? "related"}:${l.outwardIssue!.key}`);
      expect(mine.relations, i.key).toEqual(outward.sort());
    }
    // What the checks claim to cover is in the data.
    const all = [...got.values()];
    expect(new Set(all.map((i) => i.status))).toEqual(new Set(["todo", "doing", "done", "canceled"]));
    expect(p.issues.some((i) => i.fields.comment!.comments.length > 20)).toBe(true);
    expect(all.filter((i) => !i.work).length).toBeGreaterThan(10);
    expect(got.get("JRA-3")!.comments[0]!.body).toBe("Comment 0 on JRA-3 with **bold**");
    expect(got.get("JRA-1")!.body).toBe("Description of JRA-1, [a link](https://example.com/1)");
  }, 300_000);

  it("keeps hostile ADF inert: the Markdown it becomes renders without script, handlers or script links", async () => {
    const got = await snapshotProject(services, org.orgId, "JRA");
    const hostile = got.get("JRA-50")!;
    expect(hostile.title).toBe("<img src=x onerror=alert(50)> Hostile 50");
    expect(hostile.body).toContain("Inside a panel");
    expect(hostile.body).toContain("@Ada");
    expect(hostile.body).toContain("future text");
    const html = renderHtml(hostile.body!);
    // Tags and attributes only as escaped text; no link to a script or a data URL.
    expect(html).not.toMatch(/<script|<img|<[a-z][^>]*\son\w+=|href="(javascript|data):/i);
    expect(html).toContain("&lt;script&gt;");
    // The code block's own fence cannot be closed from inside it: what follows is not code.
    expect(html).toMatch(/<p>Inside a panel@Ada<\/p>/);
  });

  it("keeps the credentials nowhere: not in any table or event", async () => {
    const tables = await query<{ table_name: string }>(services.db, sql`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`);
    for (const { table_name } of tables) {
      const [row] = await query<{ dump: string | null }>(services.db, sql`select string_agg(t::text, '') as dump from ${sql.identifier(table_name)} t`);
      expect(row!.dump ?? "", table_name).not.toContain(jira.apiToken);
      expect((row!.dump ?? "").toLowerCase(), table_name).not.toContain("jira-customer.example");
    }
    expect(JSON.stringify(events)).not.toContain(jira.apiToken);
  });

  it("a second run reconciles: nothing changed writes nothing, a change is applied in place", async () => {
    const fetched = jira.fileRequests.length;
    const again = await startJiraImport(ctxOf("alice"), { ...creds(), projectKey: "JRA", projectId });
    expect(await finish(again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, unchanged: 260, filesCopied: 0, linksKept: 0 } });
    // Files already here are matched on the source's attachment id: not fetched again, not copied.
    expect(jira.fileRequests.length).toBe(fetched);
    const issue = jira.project.issues[20]!;
    issue.fields.summary = "Renamed in Jira";
    issue.fields.updated = "2026-06-01T10:00:00.000+0000";
    issue.fields.comment!.comments.push({ id: "999001", author: jira.project.users[0]!, body: { type: "doc", content: [{ type: "paragraph", content: [{ type: "text", text: "A late comment" }] }] }, created: "2026-06-01T11:00:00.000+0000" });
    const changed = await startJiraImport(ctxOf("alice"), { ...creds(), projectKey: "JRA", projectId, mapping: {} });
    expect(await finish(changed.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 1, unchanged: 259 } });
    const got = await snapshotProject(services, org.orgId, "JRA");
    expect(got.size).toBe(260);
    expect(got.get(issue.key)).toMatchObject({ title: "Renamed in Jira" });
    expect(got.get(issue.key)!.comments.at(-1)!.body).toBe("A late comment");
  }, 300_000);

  it("the owner's mapping overrides statuses and priorities by Jira's names", async () => {
    const statusDone = jira.project.issues.find((i) => i.fields.status.name === "In Review")!;
    expect(jiraStatus(statusDone, { statuses: { "In Review": "done" } })).toBe("done");
    expect(jiraPriority("Medium", { priorities: { Medium: 1 } })).toBe(1);
    expect(jiraPriority("Whatever")).toBe(0);
  });
});
