import { Writable } from "node:stream";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { sql } from "drizzle-orm";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { query } from "../../db/client.ts";
import { generateAsanaProject, startFakeAsana, type FakeAsana } from "../../test/fakes/asana.ts";
import { generateJiraProject, startFakeJira, type FakeJira } from "../../test/fakes/jira.ts";
import { generateWorkspace } from "../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../test/fakes/linear.ts";
import type { Services } from "../context.ts";
import { useTestServices } from "../testing/database.ts";
import { servicesFor, testConfig } from "../testing/db.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { waitFor } from "../testing/wait.ts";
import { peopleOf } from "../orgs/testing.ts";
import { renameProjectPrefix } from "../orgs/rename-prefix.ts";
import { applyImportRun } from "../transfer/pipeline/apply-run.ts";
import { handleMcpRequest } from "./http.ts";
import { callError, callOk, connectClient, inProcessOrigin } from "./testing.ts";

/**
 * The import tools from an agent's side, over /mcp with the SDK client (in process), against a
 * local Asana answering Asana's REST shapes over real HTTP (loopback, let through by
 * RETASC_IMPORT_ALLOW_HOSTS as the importers' own tests do): a member is refused with the rank
 * rule, the owner's agent lists the sources, sees what its token sees, dry-runs, runs, follows the
 * run with latest_import to done with counts, and finds it in import_history; a bad token is
 * answered with what to fix. The token never reaches a log line, a reply or a table.
 */
const env = useTestServices();
const clients: Client[] = [];
const logged: string[] = [];
let asana: FakeAsana;
let linear: FakeLinear;
let jira: FakeJira;
let services: Services;
let org: SeededOrg;
let owner: Client;
let member: Client;
let outsider: Client;
let other: SeededOrg;

beforeAll(async () => {
  asana = await startFakeAsana({ project: generateAsanaProject({ tasks: 12 }) });
  linear = await startFakeLinear({ workspace: generateWorkspace({ issues: 10, seed: 5 }) });
  jira = await startFakeJira({ project: generateJiraProject({ issues: 8, key: "JRA" }) });
  const allowed = [asana.url, jira.url].map((url) => new URL(url).host).join(",");
  services = servicesFor(env.tdb.database, { config: testConfig({ ASANA_API_URL: asana.url, LINEAR_API_URL: linear.apiUrl, RETASC_IMPORT_ALLOW_HOSTS: allowed }) });
  org = await seedOrg(services, { name: "Acme" });
  other = await seedOrg(services, { name: "Globex" });
  // Every line /mcp logs, at debug (each tool call is one), to look for the token in.
  const log = pino({ level: "debug" }, new Writable({ write: (chunk, _encoding, done) => (logged.push(String(chunk)), done()) }));
  const fetch: typeof globalThis.fetch = async (url, init) => handleMcpRequest(new Request(url, { ...init, signal: undefined }), { services, log });
  const connect = async (key: string) => {
    const client = await connectClient(`${inProcessOrigin}/mcp`, key, { fetch });
    clients.push(client);
    return client;
  };
  owner = await connect(org.agents.alice.key);
  member = await connect(org.agents.bob.key);
  outsider = await connect(other.agents.alice.key);
}, 60_000);
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await asana?.close();
  await linear?.close();
  await jira?.close();
});

const fromAsana = () => ({ source: "asana", token: asana.token });

describe("the import tools over /mcp", () => {
  test("a member is refused each of them with the rank rule, and nothing reaches the source", async () => {
    const before = asana.requests.length;
    for (const [tool, args] of [
      ["list_import_sources", {}],
      ["run_import", { ...fromAsana(), target: asana.project.gid }],
      ["latest_import", {}],
      ["import_history", {}],
    ] as const) {
      const refused = await callError(member, tool, args);
      expect(refused, tool).toMatchObject({ code: "FORBIDDEN", message: expect.stringContaining("owner or admin"), hint: expect.stringContaining("owner or admin") });
    }
    expect(asana.requests.length).toBe(before);
  });

  test("list_import_sources names each source and what to ask the human for", async () => {
    const { sources } = await callOk(owner, "list_import_sources");
    expect(sources.map((s: { source: string }) => s.source.split(" ")[0])).toEqual(["linear", "jira", "asana", "shortcut", "clickup", "csv"]);
    expect(sources.find((s: { source: string }) => s.source.startsWith("jira"))).toMatchObject({ needs: "token, site, email", target: expect.stringContaining("key") });
    expect(sources.find((s: { source: string }) => s.source.startsWith("asana"))).toMatchObject({ needs: "token", token: expect.stringContaining("personal access token") });
  });

  test("a bad token is answered with what to fix, and a Jira call without its site names it", async () => {
    const wrong = await callError(owner, "run_import", { source: "asana", token: "0/not-the-token" });
    expect(wrong).toMatchObject({ code: "UNAUTHORIZED", message: "Asana refused the token", hint: expect.stringContaining("personal access token") });
    expect(JSON.stringify(wrong)).not.toContain("0/not-the-token");
    const noSite = await callError(owner, "run_import", { source: "jira", token: "t", target: "ENG" });
    expect(noSite).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("site"), hint: expect.stringContaining("atlassian.net") });
    // Following the hint of the first (the right token) succeeds: what the token sees.
    const { targets } = await callOk(owner, "run_import", fromAsana());
    expect(targets).toContainEqual({ target: asana.project.gid, name: "Launch plan (Acme)", issueCount: expect.any(Number), lastImportAt: null });
  });

  test("the dry run (the default) shows counts, the mapping, the people to be ghosted and what stays behind, and writes nothing", async () => {
    const issuesBefore = await countIssues();
    const report = await callOk(owner, "run_import", { ...fromAsana(), target: asana.project.gid, mapping: { statuses: { Review: "done" } } });
    expect(report).toMatchObject({ dryRun: true, source: "asana", counts: { issues: expect.any(Number), comments: expect.any(Number) }, known: { issues: 0 } });
    expect(report.counts.issues).toBeGreaterThanOrEqual(12);
    expect(report.statuses.length).toBeGreaterThan(0);
    for (const row of report.statuses) expect(["todo", "doing", "blocked", "review", "done", "canceled"]).toContain(row.to);
    expect(report.priorities.length).toBeGreaterThan(0);
    expect(report.ghosts.length).toBeGreaterThan(0);
    expect(report.leftBehind.join(" ")).toContain("Asana's followers");
    expect(await countIssues()).toBe(issuesBefore);
    expect(await callError(owner, "latest_import")).toMatchObject({ code: "NOT_FOUND", hint: expect.stringContaining("run_import") });
  });

  test("a real run returns its id; latest_import follows it to done with counts; import_history lists it", async () => {
    const started = await callOk(owner, "run_import", { ...fromAsana(), target: asana.project.gid, project: "LAUNCH", dryRun: false });
    expect(started).toMatchObject({ dryRun: false, runId: expect.any(String), project: "LAUNCH" });
    const staged = await waitFor(async () => {
      const latest = await callOk(owner, "latest_import");
      return latest.phase !== "fetching" ? latest : null;
    }, 60_000, "the run staged");
    expect(staged.runId).toBe(started.runId);
    // The outbox's linear.apply job, run here as the importers' tests run it.
    if (staged.phase === "applying") await applyImportRun(services, started.runId);
    const done = await callOk(owner, "latest_import");
    expect(done).toMatchObject({ runId: started.runId, source: "asana", phase: "done", failure: null, finishedAt: expect.any(String) });
    expect(done.counts.created).toBeGreaterThanOrEqual(12);
    expect(done.done).toBe(done.total);
    expect(await countIssues()).toBeGreaterThanOrEqual(12);

    const history = await callOk(owner, "import_history");
    expect(history.imports.map((run: { runId: string }) => run.runId)).toEqual([started.runId]);
    expect(history.imports[0]).toMatchObject({ source: "asana", phase: "done", counts: done.counts });
    // A second run reconciles: nothing new, and history pages newest first.
    const again = await callOk(owner, "run_import", { ...fromAsana(), target: asana.project.gid, project: "LAUNCH", dryRun: false });
    await waitFor(async () => ((await callOk(owner, "latest_import")).phase !== "fetching" ? true : null), 60_000, "the second run staged");
    if ((await callOk(owner, "latest_import")).phase === "applying") await applyImportRun(services, again.runId);
    expect((await callOk(owner, "latest_import")).counts).toMatchObject({ created: 0 });
    const first = await callOk(owner, "import_history", { limit: 1 });
    expect(first.imports.map((run: { runId: string }) => run.runId)).toEqual([again.runId]);
    const rest = await callOk(owner, "import_history", { cursor: first.nextCursor });
    expect(rest.imports.map((run: { runId: string }) => run.runId)).toEqual([started.runId]);
    expect(rest.nextCursor).toBeUndefined();
  });

  test("another org's owner sees none of these runs, and a prefix taken there is a project of its own org", async () => {
    expect(await callError(outsider, "latest_import")).toMatchObject({ code: "NOT_FOUND" });
    expect((await callOk(outsider, "import_history")).imports).toEqual([]);
    const theirs = await callOk(outsider, "run_import", { ...fromAsana(), target: asana.project.gid, project: "LAUNCH", dryRun: false });
    await waitFor(async () => ((await callOk(outsider, "latest_import")).phase !== "fetching" ? true : null), 60_000, "the other org's run staged");
    if ((await callOk(outsider, "latest_import")).phase === "applying") await applyImportRun(services, theirs.runId);
    const [{ n }] = await query<{ n: number }>(services.db, sql`select count(*)::int as n from projects where prefix = 'LAUNCH' and org_id in (${org.orgId}, ${other.orgId})`);
    expect(n).toBe(2);
    expect((await callOk(outsider, "latest_import")).counts).toMatchObject({ created: expect.any(Number) });
    expect((await callOk(outsider, "latest_import")).counts.created).toBeGreaterThanOrEqual(12);
    expect((await callOk(owner, "import_history")).imports.map((run: { runId: string }) => run.runId)).not.toContain(theirs.runId);
  });

  test("a source with a key (Linear) goes into the project with that prefix, made if new; another prefix is refused with the fix", async () => {
    const { team } = linear.workspace;
    const linearKey = { source: "linear", token: linear.apiKey };
    expect((await callOk(owner, "run_import", linearKey)).targets).toContainEqual(expect.objectContaining({ target: team.id, name: `${team.key} ${team.name}` }));
    const wrong = await callError(owner, "run_import", { ...linearKey, target: team.id, project: "LAUNCH", dryRun: false });
    expect(wrong).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining(`its key ${team.key}`), hint: `Leave project out, or pass ${team.key}.` });
    const started = await callOk(owner, "run_import", { ...linearKey, target: team.id, dryRun: false });
    expect(started).toMatchObject({ dryRun: false, project: team.key });
    await waitFor(async () => ((await callOk(owner, "latest_import")).phase !== "fetching" ? true : null), 60_000, "the Linear run staged");
    if ((await callOk(owner, "latest_import")).phase === "applying") await applyImportRun(services, started.runId);
    expect(await callOk(owner, "latest_import")).toMatchObject({ runId: started.runId, source: "linear", teamKey: team.key, phase: "done" });
    const [{ n }] = await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues i join projects p on p.id = i.project_id where p.org_id = ${org.orgId} and p.prefix = ${team.key}`);
    expect(n).toBeGreaterThanOrEqual(10);
  });

  test("a project renamed since its import is found by an old prefix: Asana's as project, Linear's by its key, its numbers kept under the prefix now", async () => {
    const { as } = await peopleOf(services, org);
    await renameProjectPrefix(as.alice, { project: "LAUNCH", prefix: "LNCH" });
    const projectsBefore = await countProjects();
    const asanaAgain = await callOk(owner, "run_import", { ...fromAsana(), target: asana.project.gid, project: "launch", dryRun: false });
    expect(asanaAgain).toMatchObject({ dryRun: false, project: "LNCH" });
    expect(await finished(asanaAgain.runId)).toMatchObject({ phase: "done", counts: { created: 0 } });

    const { team } = linear.workspace;
    const linearKey = { source: "linear", token: linear.apiKey, target: team.id, dryRun: false };
    await renameProjectPrefix(as.alice, { project: team.key, prefix: "LINR" });
    const last = linear.workspace.issues.at(-1)!;
    linear.workspace.issues.push({ ...last, id: `${last.id}-later`, number: last.number + 1, title: "Filed after the rename", parentId: null, comments: [], attachments: [] });
    // Left out, the key names the project by its old prefix; the prefix now is the same project; another is still refused.
    const byKey = await callOk(owner, "run_import", linearKey);
    expect(byKey).toMatchObject({ project: "LINR" });
    expect(await finished(byKey.runId)).toMatchObject({ phase: "done", counts: { created: 1 } });
    const byNow = await callOk(owner, "run_import", { ...linearKey, project: "LINR" });
    expect(await finished(byNow.runId)).toMatchObject({ phase: "done", counts: { created: 0 } });
    expect(await callError(owner, "run_import", { ...linearKey, project: "LNCH" })).toMatchObject({ code: "INVALID_INPUT", hint: `Leave project out, or pass ${team.key}.` });
    expect(await countProjects()).toBe(projectsBefore);
    const [made] = await query<{ identifier: string }>(services.db, sql`select i.identifier from issues i join projects p on p.id = i.project_id where p.org_id = ${org.orgId} and p.prefix = 'LINR' order by i.number desc limit 1`);
    expect(made!.identifier).toBe(`LINR-${last.number + 1}`);
  });

  test("a CSV by its text: its columns and a guessed mapping, a dry run with the mapping picked, a run that a second one reconciles", async () => {
    const board = [
      "Card ID,Card Name,Notes,List Name,Labels",
      "a1,Write the spec,see **here**,To Do,docs",
      "a2,Build it,,Doing now,backend",
      "a3,Ship it,,Shipped,",
    ].join("\n");
    const { sources } = await callOk(owner, "list_import_sources");
    expect(sources.find((s: { source: string }) => s.source.startsWith("csv"))).toMatchObject({ needs: "csv", token: expect.stringContaining("at most 1048576 bytes"), target: expect.stringContaining("file's name") });
    expect(await callError(owner, "run_import", { source: "csv" })).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("csv is required") });
    expect(await callError(owner, "run_import", { source: "asana" })).toMatchObject({ code: "INVALID_INPUT", message: "token is required", hint: expect.stringContaining("list_import_sources") });
    // The cap is the Dash's upload's and the CLI's (REQUEST_MAX_BODY_BYTES), not the services' 20 MB.
    const large = `Card Name\n${"x".repeat(services.config.REQUEST_MAX_BODY_BYTES)}`;
    expect(await callError(owner, "run_import", { source: "csv", csv: large })).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining(`larger than ${services.config.REQUEST_MAX_BODY_BYTES} bytes`) });

    const { preview } = await callOk(owner, "run_import", { source: "csv", csv: board });
    expect(preview).toMatchObject({ columns: ["Card ID", "Card Name", "Notes", "List Name", "Labels"], rowCount: 3, mapping: { columns: { id: "Card ID", title: "Card Name", body: "Notes", status: "List Name", labels: "Labels" } } });
    expect(preview.rows[0]).toMatchObject({ "Card Name": "Write the spec" });
    // Without mapping.columns the dry run takes the guessed ones; with them, those picked (Notes left behind).
    expect(await callOk(owner, "run_import", { source: "csv", csv: board, target: "board.csv" })).toMatchObject({ dryRun: true, source: "csv", counts: { issues: 3 } });
    const picked = { columns: { id: "Card ID", title: "Card Name", status: "List Name" }, statuses: { "Doing now": "doing" } };
    const report = await callOk(owner, "run_import", { source: "csv", csv: board, target: "board.csv", mapping: picked });
    expect(report).toMatchObject({ dryRun: true, counts: { issues: 3 }, preview: { mapping: { columns: picked.columns } } });
    expect(report.statuses).toContainEqual({ from: "Doing now", to: "doing", issues: 1 });
    expect(report.leftBehind.join(" ")).toContain("Notes");
    expect(await callError(owner, "run_import", { source: "csv", csv: board, target: "board.csv", mapping: { columns: { id: "Card ID" } } })).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("columns.title") });

    const started = await callOk(owner, "run_import", { source: "csv", csv: board, target: "board.csv", mapping: picked, project: "BRD", dryRun: false });
    expect(started).toMatchObject({ dryRun: false, total: 3, project: "BRD" });
    expect(await finished(started.runId)).toMatchObject({ source: "csv", phase: "done", counts: { created: 3 } });
    const again = await callOk(owner, "run_import", { source: "csv", csv: board, target: "board.csv", mapping: picked, project: "BRD", dryRun: false });
    expect(await finished(again.runId)).toMatchObject({ phase: "done", counts: { created: 0 } });
    const [{ n }] = await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues i join projects p on p.id = i.project_id where p.org_id = ${org.orgId} and p.prefix = 'BRD'`);
    expect(n).toBe(3);
  });

  test("Jira takes its site and email beside the token: the projects they see, and a dry run of one", async () => {
    const jiraCloud = { source: "jira", site: jira.url, email: jira.email, token: jira.apiToken };
    expect((await callOk(owner, "run_import", jiraCloud)).targets).toContainEqual(expect.objectContaining({ target: "JRA", issueCount: 8 }));
    expect(await callOk(owner, "run_import", { ...jiraCloud, target: "JRA" })).toMatchObject({ dryRun: true, source: "jira", counts: { issues: 8 } });
    const refused = await callError(owner, "run_import", { ...jiraCloud, token: "not-the-token", target: "JRA" });
    expect(refused).toMatchObject({ code: "UNAUTHORIZED", hint: expect.stringContaining("API token") });
    expect(JSON.stringify(refused)).not.toContain("not-the-token");
  });

  test("the tokens were never logged, returned or stored", async () => {
    expect(logged.length).toBeGreaterThan(5);
    expect(logged.join("\n")).not.toContain(asana.token);
    expect(logged.join("\n")).not.toContain(linear.apiKey);
    expect(logged.join("\n")).not.toContain(jira.apiToken);
    const tables = await query<{ name: string }>(services.db, sql`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`);
    const holding = async (text: string) => {
      const found: string[] = [];
      for (const { name } of tables) {
        const [row] = await query<{ found: boolean }>(services.db, sql`select coalesce(bool_or(t::text like ${`%${text}%`}), false) as found from ${sql.identifier(name)} t`);
        if (row!.found) found.push(name);
      }
      return found;
    };
    // The search finds what the run did store (the project's gid, on the run), so finding nothing of the token means something.
    expect(await holding(asana.project.gid)).toContain("linear_import_runs");
    expect(await holding(asana.token)).toEqual([]);
    expect(await holding(linear.apiKey)).toEqual([]);
    expect(await holding(jira.apiToken)).toEqual([]);
  });
});

async function countProjects(): Promise<number> {
  const [row] = await query<{ n: number }>(services.db, sql`select count(*)::int as n from projects where org_id = ${org.orgId}`);
  return row!.n;
}

/** Waits out a run's fetch, applies the rest as the outbox's job would, and answers latest_import. */
async function finished(runId: string) {
  await waitFor(async () => ((await callOk(owner, "latest_import")).phase !== "fetching" ? true : null), 60_000, "the run staged");
  if ((await callOk(owner, "latest_import")).phase === "applying") await applyImportRun(services, runId);
  return callOk(owner, "latest_import");
}

async function countIssues(): Promise<number> {
  const [row] = await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId}`);
  return row!.n;
}
