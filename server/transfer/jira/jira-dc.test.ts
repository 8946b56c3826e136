import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import type { RetascEvent, Services } from "../../context.ts";
import { endOfDayIn } from "../../issues/levels.ts";
import { renderHtml } from "../../markdown/render.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { EPIC_LINK_FIELD } from "../../../test/fakes/jira-dc.ts";
import { generateJiraProject, startFakeJira, type FakeJira } from "../../../test/fakes/jira.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { sha256Hex, snapshotProject } from "../linear/testing.ts";
import { jiraPriority, jiraStatus } from "./normalize.ts";
import { wikiToMarkdown } from "./wiki.ts";
import { dryRunJiraImport, listJiraProjects, startJiraImport } from "./index.ts";
import { finishRun } from "../pipeline/testing.ts";

/**
 * The Jira import against a local Jira Data Center (REST v2, a personal access token as a
 * Bearer, wiki markup bodies, epics by the Epic Link field), told from Cloud by the site's
 * serverInfo: offset pages of the search, comments past the embedded 20, a 429 waited out and
 * shown, a 503 retried, hostile wiki markup; then the real pipeline, checked issue by issue.
 */
const env = useTestServices();
let dc: FakeJira;
let cloud: FakeJira;
let services: Services;
let org: SeededOrg;
const events: RetascEvent[] = [];

beforeAll(async () => {
  [dc, cloud] = await Promise.all([startFakeJira({ project: generateJiraProject({ issues: 130, key: "DCJ" }), deployment: "dataCenter" }), startFakeJira({ project: generateJiraProject({ issues: 3, key: "CLD" }) })]);
  const base = servicesFor(env.tdb.database, { config: testConfig({ RETASC_IMPORT_ALLOW_HOSTS: `${new URL(dc.url).host},${new URL(cloud.url).host}` }) });
  services = { ...base, events: { publish: async (tx, event) => { events.push(event); await base.events.publish(tx, event); } } };
  org = await seedOrg(services, { prefix: "MAIN" });
}, 60_000);
afterAll(async () => {
  await dc?.close();
  await cloud?.close();
});

const ctxOf = (who: "alice" | "bob") => org.agents[who].ctx;
/** A Data Center site takes a personal access token alone. */
const creds = () => ({ site: dc.url, apiToken: dc.apiToken });

const finish = (runId: string) => finishRun(services, ctxOf("alice"), runId);

describe("the Jira Data Center import", () => {
  let projectId: string;

  it("tells Data Center from Cloud by the site: a token alone reads DC, Cloud asks for the email; a wrong token is refused with what to fix", async () => {
    await expect(listJiraProjects(ctxOf("alice"), { site: cloud.url, apiToken: cloud.apiToken })).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("email") });
    expect(await listJiraProjects(ctxOf("alice"), { site: cloud.url, email: cloud.email, apiToken: cloud.apiToken })).toHaveLength(2);
    const wrong = await listJiraProjects(ctxOf("alice"), { ...creds(), apiToken: "not-the-token" }).catch((e: unknown) => e as Error & { code: string; hint: string });
    expect(wrong).toMatchObject({ code: "UNAUTHORIZED", message: "Jira refused the personal access token", hint: expect.stringContaining("Personal Access Tokens") });
    expect(JSON.stringify(wrong)).not.toContain(dc.apiToken);
    // An email given to a Data Center site changes nothing: the token is the credential.
    expect(await listJiraProjects(ctxOf("alice"), { ...creds(), email: "someone@example.com" })).toEqual([
      { id: "10001", key: "DCJ", name: "Project DCJ", issueCount: 130, lastImportAt: null },
      { id: "10002", key: "OTHER", name: "Other", issueCount: 0, lastImportAt: null },
    ]);
    await expect(listJiraProjects(ctxOf("bob"), creds())).rejects.toMatchObject({ code: "FORBIDDEN" });
  });

  it("a dry run lists the counts, the status and priority mapping and the people to be ghosted, and writes nothing", async () => {
    const before = await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`);
    const report = await dryRunJiraImport(ctxOf("alice"), { ...creds(), projectKey: "DCJ", mapping: { statuses: { "In Review": "done" } } });
    const p = dc.project;
    const attachments = p.issues.reduce((n, i) => n + (i.fields.attachment ?? []).length, 0);
    expect(report.counts).toMatchObject({ issues: 130, comments: p.issues.reduce((n, i) => n + i.fields.comment!.comments.length, 0), attachments, filesCopied: attachments, linksKept: 0 });
    expect(report.counts.containers).toBe(new Set(p.issues.map((i) => i.fields.parent?.id ?? (i.fields as Record<string, unknown>)[EPIC_LINK_FIELD]).filter(Boolean)).size);
    expect(report.statuses.find((s) => s.from === "In Review")).toMatchObject({ to: "done" });
    expect(report.priorities.find((s) => s.from === "Highest")).toMatchObject({ to: 1 });
    expect(report.ghosts.map((g) => g.name).sort()).toEqual(p.users.map((u) => u.displayName).sort());
    expect(await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`)).toEqual(before);
  }, 120_000);

  it("imports the project issue by issue, epics by their Epic Link, through a 429 waited out and shown and a 503 retried", async () => {
    dc.failAt(3, { status: 429, retryAfterSeconds: 1 });
    dc.failAt(6, { status: 503 });
    const before = dc.failures;
    const started = await startJiraImport(ctxOf("alice"), { ...creds(), projectKey: "DCJ", newProject: { name: "Jira DC" } });
    expect(started).toMatchObject({ projectKey: "DCJ", total: 130 });
    const status = await finish(started.runId);
    expect(status).toMatchObject({ phase: "done", error: null, source: "jira", counts: { created: 130, updated: 0, unchanged: 0 } });
    projectId = status.projectId;
    expect(dc.failures - before).toBe(2);
    expect(events.some((e) => e.kind === "import.progress" && e.runId === started.runId && e.waitSeconds === 1)).toBe(true);
    const attachments = dc.project.issues.flatMap((i) => i.fields.attachment ?? []);
    expect(status).toMatchObject({ counts: { filesCopied: attachments.length, linksKept: 0 } });
    expect(dc.fileRequests.map((r) => r.path.replace(/\?.*/, "")).sort()).toEqual(attachments.map((a) => `/secure/attachment/${a.id}/${a.filename}`).sort());
    expect(dc.fileRequests.every((r) => r.withCredentials)).toBe(true);

    const got = await snapshotProject(services, org.orgId, "DCJ");
    expect(got.size).toBe(130);
    const p = dc.project;
    const parentKey = (i: (typeof p.issues)[number]) => i.fields.parent?.key ?? ((i.fields as Record<string, unknown>)[EPIC_LINK_FIELD] as string | undefined) ?? null;
    for (const i of p.issues) {
      const f = i.fields;
      const mine = got.get(i.key)!;
      expect(mine, i.key).toBeDefined();
      expect(mine.status, i.key).toBe(jiraStatus(i));
      expect(mine.priority, i.key).toBe(jiraPriority(f.priority?.name));
      expect(mine.dueAt, i.key).toBe(f.duedate ? endOfDayIn(f.duedate, "UTC").toISOString() : null);
      expect(mine.parent, i.key).toBe(parentKey(i));
      expect(mine.work, i.key).toBe(!p.issues.some((c) => parentKey(c) === i.key));
      expect(mine.author, i.key).toBe(f.reporter?.displayName ?? null);
      expect(mine.assignee, i.key).toBe(f.assignee?.displayName ?? null);
      expect(mine.body, i.key).toBe(wikiToMarkdown(f.description as string | null));
      expect(mine.comments.map((c) => c.body), i.key).toEqual(f.comment!.comments.map((c) => (c.body as string).replace(/\*bold\*/, "**bold**")));
      expect(mine.attachments.map((a) => a.url), i.key).toEqual((f.attachment ?? []).map((a) => `file:sha256:${sha256Hex(dc.files.get(a.id)!)}`));
    }
    const all = [...got.values()];
    expect(p.issues.some((i) => (i.fields as Record<string, unknown>)[EPIC_LINK_FIELD])).toBe(true);
    expect(p.issues.some((i) => i.fields.comment!.comments.length > 20)).toBe(true);
    expect(all.filter((i) => !i.work).length).toBeGreaterThan(5);
    expect(got.get("DCJ-1")!.body).toBe("Description of DCJ-1, [a link](https://example.com/1)\n- one\n- two");
    const ghosts = await query<{ source_user_id: string }>(services.db, sql`select source_user_id from import_ghosts where org_id = ${org.orgId} and source = 'jira'`);
    expect(ghosts.map((g) => g.source_user_id.split(":").at(-1)).sort()).toEqual(p.users.map((u) => u.key).sort());
  }, 300_000);

  it("keeps hostile wiki markup inert: the Markdown it becomes renders without script, handlers or script links", async () => {
    const got = await snapshotProject(services, org.orgId, "DCJ");
    const hostile = got.get("DCJ-50")!;
    expect(hostile.body).toContain("Inside a panel, @ada");
    const html = renderHtml(hostile.body!);
    expect(html).not.toMatch(/<script|<img|<[a-z][^>]*\son\w+=|href="(javascript|data):/i);
    expect(html).toContain("&lt;script&gt;");
    // The code block's fence cannot be closed from inside it: the panel after it is not code.
    expect(html).toMatch(/<p>Inside a panel, @ada<\/p>/);
  });

  it("a second run reconciles: nothing changed writes nothing, a change is applied in place, comments not doubled", async () => {
    const fetched = dc.fileRequests.length;
    const again = await startJiraImport(ctxOf("alice"), { ...creds(), projectKey: "DCJ", projectId });
    expect(await finish(again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, unchanged: 130, filesCopied: 0 } });
    expect(dc.fileRequests.length).toBe(fetched);
    const issue = dc.project.issues[20]!;
    issue.fields.summary = "Renamed in Jira DC";
    issue.fields.updated = "2026-06-01T10:00:00.000+0000";
    issue.fields.comment!.comments.push({ id: "999001", author: dc.project.users[0]!, body: "A late _comment_", created: "2026-06-01T11:00:00.000+0000" });
    const changed = await startJiraImport(ctxOf("alice"), { ...creds(), projectKey: "DCJ", projectId });
    expect(await finish(changed.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 1, unchanged: 129 } });
    const got = await snapshotProject(services, org.orgId, "DCJ");
    expect(got.size).toBe(130);
    expect(got.get(issue.key)).toMatchObject({ title: "Renamed in Jira DC" });
    expect(got.get(issue.key)!.comments.at(-1)!.body).toBe("A late *comment*");
    expect([...got.values()].reduce((n, i) => n + i.comments.length, 0)).toBe(dc.project.issues.reduce((n, i) => n + i.fields.comment!.comments.length, 0));
  }, 300_000);

  it("keeps the token nowhere: not in any table or event", async () => {
    const tables = await query<{ table_name: string }>(services.db, sql`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`);
    for (const { table_name } of tables) {
      const [row] = await query<{ dump: string | null }>(services.db, sql`select string_agg(t::text, '') as dump from ${sql.identifier(table_name)} t`);
      expect(row!.dump ?? "", table_name).not.toContain(dc.apiToken);
    }
    expect(JSON.stringify(events)).not.toContain(dc.apiToken);
  });
});

describe("wiki markup as Markdown", () => {
  it("converts the common markup and passes the rest as text", () => {
    expect(wikiToMarkdown("h2. Plan\n*bold* _it_ -gone- {{x *y*}} [docs|https://e.com/a] [~jdoe] !shot.png!")).toBe("## Plan\n**bold** *it* ~~gone~~ `x *y*` [docs](https://e.com/a) @jdoe");
    expect(wikiToMarkdown("* a\n** b\n# one\n||H1||H2||\n|c1|c2|\nafter")).toBe("- a\n    - b\n1. one\n\n| H1 | H2 |\n| --- | --- |\n| c1 | c2 |\n\nafter");
    expect(wikiToMarkdown("text\n----\n{code:sql}select 1; -- *x*\n```{code}\n{quote}\nsaid\n{quote}\nnext")).toBe("text\n\n---\n\n```sql\nselect 1; -- *x*\n`\u200b`\u200b`\n```\n\n> said\n\nnext");
    expect(wikiToMarkdown("snake_case_name 2*3*4 a - b [x|javascript:alert(1)] [not a link]")).toBe("snake_case_name 2*3*4 a - b x [not a link]");
    expect(wikiToMarkdown("{code}never closed")).toBe("```\nnever closed\n```");
    expect(wikiToMarkdown("   ")).toBeNull();
  });
});
