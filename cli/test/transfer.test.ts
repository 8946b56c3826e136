import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp, migratedDataDir, type AppProcess } from "../../server/testing/app-process.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../../server/testing/db.ts";
import { cliPost, signUp } from "../../server/testing/world.ts";
import { retasc as runCli } from "./testing.ts";

/**
 * `retasc export` as npm installed it, against the built app: the JSON export streamed to a file
 * and the CSV to standard output, for the org's owner; a member is refused with the server's code,
 * and nothing is written.
 */
let app: AppProcess;
let database: TestDatabase | null = null;
let orgId: string;
const dirs: Record<"owner" | "member", string> = { owner: "", member: "" };

/** `retasc …` as the owner or the member, against the server their ~/.retasc names. */
const retasc = (who: "owner" | "member", args: string[]) => runCli({ retascDir: dirs[who] }, args, { env: { NO_COLOR: "1" } });

/** The session `retasc login` would have stored after the device flow. */
function storeSession(who: "owner" | "member", person: { token: string; userId: string; email: string }) {
  dirs[who] = fs.mkdtempSync(path.join(os.tmpdir(), `retasc-export-${who}-`));
  const session = { token: person.token, user: { id: person.userId, email: person.email, name: who }, signedInAt: new Date().toISOString() };
  fs.writeFileSync(path.join(dirs[who], "config.json"), JSON.stringify({ sessions: { [app.url]: session }, defaultUrl: app.url }), { mode: 0o600 });
}

beforeAll(async () => {
  database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  app = await startApp({ ...(database ? { DATABASE_URL: database.url! } : { RETASC_DATA_DIR: migratedDataDir() }), RETASC_EMAIL_PASSWORD: "on" });
  const owner = await signUp(app.url, "Olga");
  orgId = (await cliPost(app.url, owner.token, "orgs", { name: "Olga's org" })).orgId;
  const project = await cliPost(app.url, owner.token, "projects", { orgId, name: "Web", prefix: "WEB" });
  const { key } = await cliPost(app.url, owner.token, "keys", { orgId, action: "mint", projectId: project.projectId ?? project.id, runtime: "codex" });
  // One stateless tools/call over /mcp, as an agent files an issue.
  const filed = await fetch(`${app.url}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "save_issue", arguments: { title: "Ship the export", work: true, changeType: "feat", noDependency: "first", body: "=1+1 stays text in CSV" } } }),
  });
  expect((await filed.json()).result.structuredContent).toMatchObject({ identifier: "WEB-1" });
  const member = await signUp(app.url, "Mick");
  const invite = await cliPost(app.url, owner.token, "members", { orgId, action: "invite" });
  await cliPost(app.url, member.token, "join", { code: invite.code });
  storeSession("owner", owner);
  storeSession("member", member);
});
afterAll(async () => {
  await app?.stop();
  await database?.close();
  for (const dir of Object.values(dirs)) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("retasc export", () => {
  it("streams the JSON export to --out and the CSV to standard output", async () => {
    const out = path.join(dirs.owner, "backup.json");
    const json = await retasc("owner", ["export", "--org-id", orgId, "--out", out]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).toContain("Exported to");
    expect(fs.statSync(out).mode & 0o777).toBe(0o600);
    const doc = JSON.parse(fs.readFileSync(out, "utf8"));
    expect(doc).toMatchObject({ format: "retasc-export", version: 1, org: { id: orgId, name: "Olga's org" } });
    expect(doc.issues).toEqual([expect.objectContaining({ identifier: "WEB-1", title: "Ship the export", body: "=1+1 stays text in CSV" })]);
    expect(doc.people.map((p: { member: { role: string } }) => p.member.role).sort()).toEqual(["member", "owner"]);
    // --json says where and how much, for scripts.
    const again = await retasc("owner", ["export", "--org-id", orgId, "--out", out, "--json"]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ out, bytes: fs.statSync(out).size, format: "json" });

    const csv = await retasc("owner", ["export", "--org-id", orgId, "--format", "csv"]);
    expect(csv.code, csv.stderr).toBe(0);
    expect(csv.stdout.split("\n")[0]).toMatch(/^identifier,project,title,/);
    expect(csv.stdout).toContain("WEB-1,WEB,Ship the export,todo");
    expect(csv.stdout).toContain("'=1+1 stays text in CSV");
  });

  it("refuses a member with the server's code and writes nothing", async () => {
    const out = path.join(dirs.member, "nope.json");
    const refused = await retasc("member", ["export", "--org-id", orgId, "--out", out]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("FORBIDDEN");
    expect(fs.existsSync(out)).toBe(false);
    const bad = await retasc("owner", ["export", "--org-id", orgId, "--format", "xml"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--format is json or csv");
  });
});
