import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { generateJiraProject, startFakeJira, type FakeJira } from "../../test/fakes/jira.ts";
import { generateWorkspace } from "../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../test/fakes/linear.ts";
import type { Ctx, Services } from "../context.ts";
import { useTestServices } from "../testing/database.ts";
import { servicesFor, testConfig } from "../testing/db.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { importAgain } from "./again.ts";
import { startJiraImport } from "./jira/index.ts";
import { snapshotProject } from "./linear/testing.ts";
import { startLinearImport } from "./linear/index.ts";
import { forgetImportCredential, listKeptCredentials } from "./pipeline/kept-credentials.ts";
import { importStatus } from "./pipeline/status.ts";
import { finishRun } from "./pipeline/testing.ts";

/**
 * A credential kept to import again (decision 094), against local Linear and Jira stand-ins over
 * real HTTP: kept only when asked, sealed under the org's key, never read back by a list, used by
 * importAgain with the mapping it was kept with, owners' and admins' only, the org's only, and
 * gone when forgotten.
 */
const env = useTestServices();
let linear: FakeLinear;
let jira: FakeJira;
let services: Services;
let org: SeededOrg;

beforeAll(async () => {
  [linear, jira] = await Promise.all([startFakeLinear({ workspace: generateWorkspace({ issues: 60, seed: 9 }) }), startFakeJira({ project: generateJiraProject({ issues: 20, key: "KEP" }) })]);
  const hosts = [new URL(linear.url).host, new URL(jira.url).host].join(",");
  services = servicesFor(env.tdb.database, { config: testConfig({ LINEAR_API_URL: linear.apiUrl, LINEAR_UPLOADS_URL: linear.url, RETASC_OUTBOUND_ALLOW_HOSTS: hosts, RETASC_IMPORT_ALLOW_HOSTS: hosts }) });
  org = await seedOrg(services, { prefix: "MAIN" });
}, 60_000);
afterAll(() => Promise.all([linear?.close(), jira?.close()]));

const alice = () => ({ ...org.agents.alice.ctx, config: services.config }) as Ctx;
const bob = () => ({ ...org.agents.bob.ctx, config: services.config }) as Ctx;

const finish = (ctx: Ctx, runId: string) => finishRun(services, ctx, runId);

const storedCredentials = async (orgId: string) => query<{ source: string; credential_enc: string }>(services.db, sql`select source, credential_enc from import_credentials where org_id = ${orgId}`);

describe("a credential kept to import again", () => {
  const team = () => linear.workspace.team;

  it("is kept only when asked, sealed under the org's key, and listed without the credential", async () => {
    const plain = await startLinearImport(alice(), { apiKey: linear.apiKey, teamId: team().id, newProject: { name: "Engineering" } });
    expect(await finish(alice(), plain.runId)).toMatchObject({ phase: "done" });
    expect(await storedCredentials(org.orgId)).toEqual([]);

    const kept = await startLinearImport(alice(), { apiKey: linear.apiKey, teamId: team().id, projectId: (await importStatus(alice(), { runId: plain.runId })).projectId, mapping: { statuses: { "In Review": "done" } }, keepCredential: true });
    expect(await finish(alice(), kept.runId)).toMatchObject({ phase: "done" });
    const [row] = await storedCredentials(org.orgId);
    expect(row!.credential_enc).not.toContain(linear.apiKey);
    const cipher = await services.keyring.forOrg(services.db, org.orgId);
    expect(JSON.parse(cipher.decrypt(row!.credential_enc)!)).toEqual({ token: linear.apiKey });

    const listed = await listKeptCredentials(alice());
    expect(listed).toEqual([{ source: "linear", sourceId: team().id, keptBy: expect.any(String), keptAt: expect.any(String), usedAt: null }]);
    expect(JSON.stringify(listed)).not.toContain(linear.apiKey);
  }, 300_000);

  it("is an owner's or admin's: a member can neither list, use nor forget one", async () => {
    await expect(listKeptCredentials(bob())).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(importAgain(bob(), { source: "linear", sourceId: team().id })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(forgetImportCredential(bob(), { source: "linear", sourceId: team().id })).rejects.toMatchObject({ code: "FORBIDDEN" });
  });

  it("imports again into the same project with the kept mapping: changes applied, nothing duplicated", async () => {
    const issue = linear.workspace.issues[3]!;
    issue.title = "Renamed in Linear";
    issue.updatedAt = new Date().toISOString();
    const again = await importAgain(alice(), { source: "linear", sourceId: team().id });
    expect(await finish(alice(), again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 1, unchanged: 59 } });
    const got = await snapshotProject(services, org.orgId, team().key);
    expect(got.size).toBe(60);
    expect(got.get(`${team().key}-${issue.number}`)!.title).toBe("Renamed in Linear");
    // The mapping it was kept with: Linear's In Review issues are done here.
    const inReview = linear.workspace.states.find((s) => s.name === "In Review")!;
    const reviewed = linear.workspace.issues.filter((i) => i.stateId === inReview.id);
    expect(reviewed.length).toBeGreaterThan(0);
    for (const i of reviewed) expect(got.get(`${team().key}-${i.number}`)!.status).toBe("done");
    expect((await listKeptCredentials(alice()))[0]!.usedAt).not.toBeNull();
  }, 300_000);

  it("is the org's own: another org's owner finds nothing to import again", async () => {
    const other = await seedOrg(services, { prefix: "OTHR" });
    await expect(importAgain({ ...other.agents.alice.ctx, config: services.config } as Ctx, { source: "linear", sourceId: team().id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(await listKeptCredentials({ ...other.agents.alice.ctx, config: services.config } as Ctx)).toEqual([]);
  });

  it("keeps Jira's site, email and token; a credential the source now refuses says to forget it and keep a new one", async () => {
    const creds = { site: jira.url, email: jira.email, apiToken: jira.apiToken, projectKey: "KEP" };
    const first = await startJiraImport(alice(), { ...creds, newProject: { name: "Kept Jira" }, keepCredential: true });
    expect(await finish(alice(), first.runId)).toMatchObject({ phase: "done" });
    const cipher = await services.keyring.forOrg(services.db, org.orgId);
    const jiraRow = (await storedCredentials(org.orgId)).find((r) => r.source === "jira")!;
    expect(JSON.parse(cipher.decrypt(jiraRow.credential_enc)!)).toEqual({ token: jira.apiToken, site: jira.url, email: jira.email });

    // The token revoked at Jira: the kept one is refused there.
    await services.db.execute(sql`update import_credentials set credential_enc = ${cipher.encrypt(JSON.stringify({ token: "ATATT3x-revoked", site: jira.url, email: jira.email }))} where org_id = ${org.orgId} and source = 'jira'`);
    const refused = await importAgain(alice(), { source: "jira", sourceId: "KEP" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "UNAUTHORIZED", hint: expect.stringContaining("Forget the kept credential") });
    expect(JSON.stringify(refused)).not.toContain("ATATT3x-revoked");
  }, 300_000);

  it("is gone when forgotten, and importing again then says how to keep one", async () => {
    await forgetImportCredential(alice(), { source: "jira", sourceId: "KEP" });
    expect((await storedCredentials(org.orgId)).map((r) => r.source)).toEqual(["linear"]);
    await expect(importAgain(alice(), { source: "jira", sourceId: "KEP" })).rejects.toMatchObject({ code: "NOT_FOUND", hint: expect.stringContaining("keepCredential") });
    await expect(forgetImportCredential(alice(), { source: "jira", sourceId: "KEP" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(importAgain(alice(), { source: "gitlab" as never, sourceId: "x" })).rejects.toMatchObject({ name: "ZodError" });
  });
});
