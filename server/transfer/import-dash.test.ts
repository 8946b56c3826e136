import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { query } from "../../db/client.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keyring } from "../crypto/index.ts";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { seedOwnedOrg, selectedIn, signUpOverHttp } from "../testing/dash.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { generateJiraProject, startFakeJira, type FakeJira } from "../../test/fakes/jira.ts";
import { generateAsanaProject, startFakeAsana, type FakeAsana } from "../../test/fakes/asana.ts";
import { generateShortcutWorkspace, startFakeShortcut, type FakeShortcut } from "../../test/fakes/shortcut.ts";
import { generateClickUpWorkspace, startFakeClickUp, type FakeClickUp } from "../../test/fakes/clickup.ts";
import { waitFor } from "../testing/wait.ts";

/**
 * The Dash's Import page for Jira, Asana, Shortcut and CSV over real HTTP against the built app: plain form posts,
 * as a browser without JavaScript sends them (the CSV as a multipart upload): a dry run that
 * writes nothing, then the run with its progress to the end. The token is never in an answer.
 */
describe.skipIf(testDriver !== "postgres")("the Dash's Jira, Asana, Shortcut, ClickUp and CSV import (needs TEST_DATABASE_URL)", () => {
  let database: TestDatabase;
  let app: AppProcess;
  let jira: FakeJira;
  let asana: FakeAsana;
  let shortcut: FakeShortcut;
  let clickup: FakeClickUp;
  let owner: { cookie: string };
  const seen: string[] = [];
  const masterKey = crypto.randomBytes(32);

  beforeAll(async () => {
    jira = await startFakeJira({ project: generateJiraProject({ issues: 40, key: "DJ" }) });
    asana = await startFakeAsana({ project: generateAsanaProject({ tasks: 30 }) });
    shortcut = await startFakeShortcut({ workspace: generateShortcutWorkspace({ stories: 30 }) });
    clickup = await startFakeClickUp({ workspace: generateClickUpWorkspace({ tasks: 30, inFolder: 3 }) });
    database = await createTestDatabase({ max: 2 });
    app = await startApp({
      DATABASE_URL: database.url!,
      RETASC_MASTER_KEY: masterKey.toString("base64"),
      RETASC_EMAIL_PASSWORD: "on",
      RETASC_WORKERS: "inline",
      OUTBOX_POLL_MS: "200",
      RETASC_IMPORT_ALLOW_HOSTS: `${new URL(jira.url).host},${new URL(asana.url).host},${new URL(shortcut.url).host},${new URL(clickup.url).host}`,
      ASANA_API_URL: asana.url,
      SHORTCUT_API_URL: shortcut.url,
      CLICKUP_API_URL: clickup.url,
    });
    const email = `owner-${crypto.randomBytes(3).toString("hex")}@example.com`;
    owner = await signUpOverHttp(app.url, email, "Owner");
    await seedOwnedOrg(database.database.db, new Keyring(masterKey), { ownerEmail: email, orgName: "Importers", prefix: "OWN", runtimes: [] });
  }, 180_000);
  afterAll(async () => {
    await app?.stop();
    await database?.close();
    await jira?.close();
    await asana?.close();
    await shortcut?.close();
    await clickup?.close();
  });

  const page = (source: string) => `${app.url}/dash/settings/import?source=${source}`;
  async function record(response: Response) {
    const body = await response.text();
    seen.push(`${response.status} ${response.headers.get("location") ?? ""}\n${body}`);
    return { status: response.status, location: response.headers.get("location"), body };
  }
  const post = async (source: string, body: URLSearchParams | FormData) =>
    record(await fetch(page(source), { method: "POST", redirect: "manual", headers: { cookie: owner.cookie, origin: app.url, ...(body instanceof URLSearchParams ? { "content-type": "application/x-www-form-urlencoded" } : {}) }, body }));
  const finished = (path: string) =>
    waitFor(async () => {
      const { body } = await record(await fetch(`${app.url}${path}`, { headers: { cookie: owner.cookie } }));
      return body.includes("Finished ") || body.includes("The import failed") ? body : null;
    }, 120_000, "the import to finish", 250);

  it("Jira: a dry run shows the mapping and writes nothing; the import runs to its end", async () => {
    const shown = await record(await fetch(page("jira"), { headers: { cookie: owner.cookie } }));
    expect(shown.body).toContain("Import from Jira");
    expect(shown.body).toContain('name="apiToken"');
    const fields = { source: "jira", site: jira.url, email: jira.email, apiToken: jira.apiToken, projectKey: "DJ", target: "new", projectName: "From Jira" };
    const dry = await post("jira", new URLSearchParams({ ...fields, intent: "dry-run" }));
    expect(dry.status).toBe(200);
    expect(dry.body).toContain("Dry run: nothing was written");
    expect(selectedIn(dry.body, "status.In Progress")).toBe("doing");
    const wrong = await post("jira", new URLSearchParams({ ...fields, apiToken: "nope", intent: "dry-run" }));
    expect(wrong.body).toContain("Jira refused the email and API token");
    const started = await post("jira", new URLSearchParams({ ...fields, intent: "start" }));
    expect(started.status).toBe(302);
    expect(started.location).toMatch(/^\/dash\/settings\/import\?run=[^&]+&source=jira$/);
    expect(await finished(started.location!)).toContain("40 created");
  });

  it("Asana: a dry run shows the sections' mapping and writes nothing; the import runs to its end", async () => {
    const shown = await record(await fetch(page("asana"), { headers: { cookie: owner.cookie } }));
    expect(shown.body).toContain("Import from Asana");
    expect(shown.body).toContain('name="accessToken"');
    const fields = { source: "asana", accessToken: asana.token, projectGid: `https://app.asana.com/0/${asana.project.gid}/list`, target: "new", projectName: "", prefix: "ASN" };
    const dry = await post("asana", new URLSearchParams({ ...fields, intent: "dry-run" }));
    expect(dry.status).toBe(200);
    expect(dry.body).toContain("Dry run: nothing was written");
    expect(selectedIn(dry.body, "status.In Progress")).toBe("doing");
    expect(dry.body).not.toContain(asana.token);
    const wrong = await post("asana", new URLSearchParams({ ...fields, accessToken: "nope", intent: "dry-run" }));
    expect(wrong.body).toContain("Asana refused the token");
    const started = await post("asana", new URLSearchParams({ ...fields, intent: "start" }));
    expect(started.status, started.body.slice(0, 400)).toBe(302);
    expect(started.location).toMatch(/^\/dash\/settings\/import\?run=[^&]+&source=asana$/);
    const tasks = 30 + [...asana.project.subtasks.values()].flat().length;
    expect(await finished(started.location!)).toContain(`${tasks} created`);
  });

  it("Shortcut: a dry run shows the workflow states' mapping and writes nothing; the import runs to its end", async () => {
    const shown = await record(await fetch(page("shortcut"), { headers: { cookie: owner.cookie } }));
    expect(shown.body).toContain("Import from Shortcut");
    const fields = { source: "shortcut", apiToken: shortcut.token, team: "Mobile", target: "new", projectName: "", prefix: "SHC" };
    const dry = await post("shortcut", new URLSearchParams({ ...fields, intent: "dry-run" }));
    expect(dry.status).toBe(200);
    expect(dry.body).toContain("Dry run: nothing was written");
    expect(selectedIn(dry.body, "status.In Development")).toBe("doing");
    const wrong = await post("shortcut", new URLSearchParams({ ...fields, apiToken: "nope", intent: "dry-run" }));
    expect(wrong.body).toContain("Shortcut refused the token");
    const started = await post("shortcut", new URLSearchParams({ ...fields, intent: "start" }));
    expect(started.status, started.body.slice(0, 400)).toBe(302);
    expect(started.location).toMatch(/^\/dash\/settings\/import\?run=[^&]+&source=shortcut$/);
    const epics = new Set(shortcut.workspace.stories.map((s) => s.epic_id).filter((e) => e)).size;
    expect(await finished(started.location!)).toContain(`${30 + epics} created`);
  });

  it("Shortcut: an epic instead of a team, exactly one of them: the epic dry-runs; its run into the team's project finds its stories there, nothing doubled", async () => {
    const shown = await record(await fetch(page("shortcut"), { headers: { cookie: owner.cookie } }));
    expect(shown.body).toContain('name="epic"');
    const stories = shortcut.workspace.stories.filter((s) => s.epic_id === 9001).length;
    const fields = { source: "shortcut", apiToken: shortcut.token, team: "", epic: "Epic 1", target: "new", projectName: "", prefix: "SHE" };
    const both = await post("shortcut", new URLSearchParams({ ...fields, team: "Mobile", intent: "dry-run" }));
    expect(both.body).toContain("pass team or epic, not both");
    const neither = await post("shortcut", new URLSearchParams({ ...fields, epic: "", intent: "dry-run" }));
    expect(neither.body).toContain("team is required, or instead epic");
    const dry = await post("shortcut", new URLSearchParams({ ...fields, intent: "dry-run" }));
    expect(dry.status).toBe(200);
    expect(dry.body).toContain("Dry run: nothing was written");
    expect(dry.body).toContain('value="Epic 1"');
    // The team's import above brought these stories over: the epic's run finds them there, nothing doubled.
    const [{ id }] = (await query<{ id: string }>(database.database.db, sql`select id from projects where prefix = 'SHC'`)) as [{ id: string }];
    const started = await post("shortcut", new URLSearchParams({ ...fields, target: id, epic: "9001", intent: "start" }));
    expect(started.status, started.body.slice(0, 400)).toBe(302);
    expect(await finished(started.location!)).toContain(`${stories + 1} unchanged`);
  });

  it("ClickUp: a dry run shows the statuses' mapping and writes nothing; the mapping changed there is the one the import applies", async () => {
    const shown = await record(await fetch(page("clickup"), { headers: { cookie: owner.cookie } }));
    expect(shown.body).toContain("Import from ClickUp");
    expect(shown.body).toContain('name="location"');
    const fields = { source: "clickup", apiToken: clickup.token, location: `https://app.clickup.com/${clickup.workspace.team.id}/v/s/${clickup.workspace.space.id}`, target: "new", projectName: "", prefix: "CUP" };
    const dry = await post("clickup", new URLSearchParams({ ...fields, intent: "dry-run" }));
    expect(dry.status).toBe(200);
    expect(dry.body).toContain("Dry run: nothing was written");
    expect(selectedIn(dry.body, "status.in progress")).toBe("doing");
    expect(selectedIn(dry.body, "status.review")).toBe("doing");
    expect(selectedIn(dry.body, "priority.urgent")).toBe("1");
    // The dry run's selects, changed: sent with the next dry run, they are what it shows; refused, they are drawn again.
    const mapping = { "status.review": "canceled", "priority.urgent": "4" };
    const remapped = await post("clickup", new URLSearchParams({ ...fields, ...mapping, intent: "dry-run" }));
    expect(selectedIn(remapped.body, "status.review")).toBe("canceled");
    expect(selectedIn(remapped.body, "priority.urgent")).toBe("4");
    const wrong = await post("clickup", new URLSearchParams({ ...fields, ...mapping, apiToken: "nope", intent: "dry-run" }));
    expect(wrong.body).toContain("ClickUp refused the token");
    expect(selectedIn(wrong.body, "status.review")).toBe("canceled");
    // A 429 part way through the reading holds the run in its fetch: the page names the source it reads.
    clickup.failAt(20, { status: 429, retryAfterSeconds: 2 });
    const started = await post("clickup", new URLSearchParams({ ...fields, ...mapping, intent: "start" }));
    expect(started.status, started.body.slice(0, 400)).toBe(302);
    expect(started.location).toMatch(/^\/dash\/settings\/import\?run=[^&]+&source=clickup$/);
    expect((await record(await fetch(`${app.url}${started.location}`, { headers: { cookie: owner.cookie } }))).body).toContain("Fetching from ClickUp");
    expect(await finished(started.location!)).toContain(`${clickup.workspace.tasks.length} created`);
    const tasks = clickup.workspace.tasks;
    const [counts] = await query<{ canceled: number; low: number }>(database.database.db, sql`select count(*) filter (where i.status = 'canceled')::int as canceled, count(*) filter (where i.priority = 4)::int as low from issues i join projects p on p.id = i.project_id where p.prefix = 'CUP'`);
    expect(counts).toEqual({
      canceled: tasks.filter((t) => t.status.status === "review" || t.status.status === "won't do").length,
      low: tasks.filter((t) => t.priority?.priority === "urgent" || t.priority?.priority === "low").length,
    });
  });

  it("CSV: the upload is previewed with a guessed mapping, changed, dry run, then imported", async () => {
    const upload = new FormData();
    upload.set("source", "csv");
    upload.set("intent", "preview");
    upload.set("file", new Blob(["Key,Summary,State\nk1,First,Done\nk2,Second,Open\n"], { type: "text/csv" }), "tasks.csv");
    const preview = await post("csv", upload);
    expect(preview.status).toBe(200);
    expect(preview.body).toContain('data-testid="csv-mapping"');
    expect(preview.body).toMatch(/<option value="Summary" selected="">Summary<\/option>/);
    const csv = /<textarea name="csv"[^>]*>([^<]*)<\/textarea>/.exec(preview.body)![1]!.replace(/&#x27;/g, "'");
    const mapping = { source: "csv", csv: csv.replace(/^\n/, ""), "column.id": "Key", "column.title": "Summary", "column.status": "State", "status.Done": "canceled", "status.Open": "todo", name: "tasks.csv", target: "new", projectName: "Tasks", prefix: "TSK" };
    const dry = await post("csv", new URLSearchParams({ ...mapping, intent: "dry-run" }));
    expect(dry.body).toContain("Dry run: nothing was written");
    expect(selectedIn(dry.body, "status.Done")).toBe("canceled");
    const started = await post("csv", new URLSearchParams({ ...mapping, intent: "start" }));
    expect(started.status, started.body.slice(0, 400)).toBe(302);
    expect(await finished(started.location!)).toContain("2 created");
  });

  it("never answers with the token", () => {
    for (const answer of seen) expect(answer).not.toContain(jira.apiToken);
    for (const answer of seen) expect(answer).not.toContain(asana.token);
    for (const answer of seen) expect(answer).not.toContain(shortcut.token);
    for (const answer of seen) expect(answer).not.toContain(clickup.token);
  });
});
